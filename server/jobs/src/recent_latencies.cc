// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/recent_latencies.h"

#include <algorithm>

namespace nodefl::server::jobs {

RecentLatencies::RecentLatencies(size_t window, size_t min_samples)
    : ring_(std::max<size_t>(window, 1), 0), min_samples_(std::min(min_samples, std::max<size_t>(window, 1))) {}

void RecentLatencies::Add(uint64_t latency_us) {
  ring_[next_] = latency_us;
  next_ = (next_ + 1) % ring_.size();
  ++count_;
  // Every addition while the window fills, then every window / 8: a
  // coordinator asks at every poll, and the tail moves slowly.
  const size_t refresh = std::max<size_t>(ring_.size() / 8, 1);
  if (count_ <= ring_.size() || count_ % refresh == 0) {
    const size_t n = std::min(count_, ring_.size());
    std::vector<uint64_t> sorted(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(n));
    // The smallest value with at least 99 % of the window at or below it.
    const size_t rank = (99 * n + 99) / 100 - 1;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank), sorted.end());
    p99_us_ = sorted[rank];
  }
}

uint64_t RecentLatencies::StallAfterUs(uint32_t factor, uint64_t floor_us, uint64_t cap_us) const {
  if (factor == 0 || count_ < min_samples_) return 0;
  const uint64_t stall = std::max(floor_us, uint64_t{factor} * P99Us());
  return std::min(stall, cap_us);
}

}  // namespace nodefl::server::jobs
