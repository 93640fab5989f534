// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "nodefl/server/fedwalk/dissimilarity/pair_chunks.h"

namespace nodefl::server::fedwalk {
namespace {

// Every pair i < j exactly once, chunks in condensed order within the cost
// target (unless a single pair exceeds it).
void CheckSplit(const std::vector<uint32_t>& sizes, uint64_t target_chunks) {
  const uint32_t n = static_cast<uint32_t>(sizes.size());
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = i + 1; j < n; ++j) total += PairCost(sizes[i], sizes[j]);
  }
  const uint64_t target = std::max<uint64_t>(1, total / target_chunks);

  const std::vector<PairChunk> chunks = SplitPairs(sizes, target_chunks);
  uint32_t expected_row = 0;
  uint32_t expected_first = 1;
  for (const PairChunk& c : chunks) {
    if (expected_first == n) {  // previous row complete
      ++expected_row;
      expected_first = expected_row + 1;
    }
    ASSERT_EQ(c.row, expected_row);
    ASSERT_EQ(c.first, expected_first);
    ASSERT_GT(c.end, c.first);
    ASSERT_LE(c.end, n);
    uint64_t cost = 0;
    for (uint32_t j = c.first; j < c.end; ++j) cost += PairCost(sizes[c.row], sizes[j]);
    if (c.end - c.first > 1) {
      EXPECT_LE(cost, target);
    }
    // Maximal: one more pair would not have fit.
    if (c.end < n) {
      EXPECT_GT(cost + PairCost(sizes[c.row], sizes[c.end]), target);
    }
    expected_first = c.end;
  }
  if (n >= 2) {
    EXPECT_EQ(expected_row, n - 2);
    EXPECT_EQ(expected_first, n);
  } else {
    EXPECT_TRUE(chunks.empty());
  }
}

TEST(PairChunksTest, CoversEveryPairOnceWithinTheTarget) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<uint32_t> size(0, 60);
  for (uint32_t n : {0u, 1u, 2u, 3u, 17u, 120u}) {
    std::vector<uint32_t> sizes(n);
    for (uint32_t& s : sizes) s = size(rng);
    if (n > 5) sizes[3] = 4000;  // a hub: its pairs alone exceed small targets
    for (uint64_t target_chunks : {1u, 7u, 256u, 100000u}) CheckSplit(sizes, target_chunks);
  }
}

TEST(PairChunksTest, UniformCostsGiveEvenChunks) {
  const std::vector<uint32_t> sizes(101, 0);  // histograms: every pair costs the same
  const std::vector<PairChunk> chunks = SplitPairs(sizes, 50);  // 5050 pairs, ~101 per chunk
  size_t longest = 0;
  for (const PairChunk& c : chunks) longest = std::max<size_t>(longest, c.end - c.first);
  EXPECT_EQ(longest, 100u);  // row 0 is the only row that long, and it fits in one chunk
  EXPECT_EQ(chunks.size(), 100u);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
