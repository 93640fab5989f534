// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/job_entropy.h"

#include "nodefl/core/little_endian.h"
#include "nodefl/server/core/os_random.h"

namespace nodefl::server::jobs {
namespace {
thread_local EntropyTape* current_tape = nullptr;
}  // namespace

void FillJobEntropy(std::span<uint8_t> out) {
  if (current_tape != nullptr) {
    current_tape->Fill(out);
  } else {
    FillFromOsEntropy(out);
  }
}

uint64_t JobEntropyU64() {
  uint8_t bytes[8];
  FillJobEntropy(bytes);
  return LoadU64Le(bytes);
}

ScopedEntropyTape::ScopedEntropyTape(EntropyTape* tape) : previous_(current_tape) { current_tape = tape; }
ScopedEntropyTape::~ScopedEntropyTape() { current_tape = previous_; }

}  // namespace nodefl::server::jobs
