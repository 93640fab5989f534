// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RecentLatencies: the latencies of the last few hundred completed tasks
// (walks, here), and from them how long a task may go without a result
// before a coordinator calls it stalled: `factor` times their 99th
// percentile, at least `floor_us` and at most `cap_us`. Recent, not all:
// what a task takes changes over a job (the first walks wait for keys, the
// tail runs on an idle fleet), and a stall is judged against the present.
// Until `min_samples` tasks have completed there is no figure (0): a
// coordinator then relies on its fixed timeout alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nodefl::server::jobs {

class RecentLatencies {
 public:
  explicit RecentLatencies(size_t window = 512, size_t min_samples = 64);

  void Add(uint64_t latency_us);
  // 0 while fewer than min_samples latencies were added, or when factor is 0.
  uint64_t StallAfterUs(uint32_t factor, uint64_t floor_us, uint64_t cap_us) const;
  // The 99th percentile of the window (0 when empty), as of the last
  // refresh (Add).
  uint64_t P99Us() const { return p99_us_; }
  size_t count() const { return count_; }

 private:
  std::vector<uint64_t> ring_;
  size_t next_ = 0;
  size_t count_ = 0;  // added in all
  size_t min_samples_;
  uint64_t p99_us_ = 0;  // recomputed by Add (see there)
};

}  // namespace nodefl::server::jobs
