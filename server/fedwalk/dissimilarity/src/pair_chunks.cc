// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/dissimilarity/pair_chunks.h"

#include <algorithm>

namespace nodefl::server::fedwalk {

std::vector<PairChunk> SplitPairs(std::span<const uint32_t> sizes, uint64_t target_chunks) {
  const uint32_t n = static_cast<uint32_t>(sizes.size());
  std::vector<PairChunk> chunks;
  if (n < 2) return chunks;

  // prefix[t] = sum over u < t of (size_u + 1): with it the cost of any run
  // of a row is O(1), as PairCost is linear in size_j.
  std::vector<uint64_t> prefix(size_t{n} + 1, 0);
  for (uint32_t t = 0; t < n; ++t) prefix[t + 1] = prefix[t] + sizes[t] + 1;
  auto run_cost = [&](uint32_t i, uint32_t first, uint32_t end) {
    return (uint64_t{sizes[i]} + 1) * (prefix[end] - prefix[first]) + kPairOverheadCells * (end - first);
  };

  uint64_t total = 0;
  for (uint32_t i = 0; i + 1 < n; ++i) total += run_cost(i, i + 1, n);
  const uint64_t target = std::max<uint64_t>(1, total / std::max<uint64_t>(1, target_chunks));

  for (uint32_t i = 0; i + 1 < n; ++i) {
    uint32_t first = i + 1;
    while (first < n) {
      // Largest end in (first, n] whose run still fits the target; costs grow
      // with end, so binary search. At least one pair per chunk.
      uint32_t lo = first + 1;
      uint32_t hi = n;
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (run_cost(i, first, mid) <= target) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      chunks.push_back(PairChunk{i, first, lo});
      first = lo;
    }
  }
  return chunks;
}

}  // namespace nodefl::server::fedwalk
