// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Entropy for jobs: public salts and seeds. A job draws them through
// FillJobEntropy, never from the OS directly, so that the JobRunner can
// journal what a job drew and hand it the same bytes when it makes the job
// again after a server restart and replays its journal (docs/reliability.md,
// "Server restarts"). Without a tape on the calling thread the bytes come
// from the OS.
#pragma once

#include <cstdint>
#include <span>

namespace nodefl::server::jobs {

// Where a thread's job entropy comes from while a tape is set.
class EntropyTape {
 public:
  virtual ~EntropyTape() = default;
  virtual void Fill(std::span<uint8_t> out) = 0;
};

// The calling thread's tape if one is set (ScopedEntropyTape), else the OS.
void FillJobEntropy(std::span<uint8_t> out);
uint64_t JobEntropyU64();

// Sets the calling thread's tape for the scope's lifetime (the runner calls
// a job on one thread at a time: its strand).
class ScopedEntropyTape {
 public:
  explicit ScopedEntropyTape(EntropyTape* tape);
  ~ScopedEntropyTape();
  ScopedEntropyTape(const ScopedEntropyTape&) = delete;
  ScopedEntropyTape& operator=(const ScopedEntropyTape&) = delete;

 private:
  EntropyTape* previous_;
};

}  // namespace nodefl::server::jobs
