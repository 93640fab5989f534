// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Runs work(t) on `threads` threads while the calling thread reports
// progress: progress(done, total) about every 0.5 s from the calling thread
// only (so callbacks need no locking), then once with done == total after
// every worker returned. Workers count what they finish in `done`.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace nodefl::server::fedwalk {

void RunWorkersWithProgress(unsigned threads, const std::function<void(unsigned)>& work,
                            const std::atomic<uint64_t>& done, uint64_t total,
                            const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace nodefl::server::fedwalk
