// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// NeighbourCap: which neighbours a device over its capacity keeps, and the
// sensitivity that costs.
#include "nodefl/privacy/neighbour_cap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "heap_counter.h"

namespace nodefl {
namespace {

std::vector<uint32_t> Keep(const std::vector<uint32_t>& ids, size_t capacity) {
  std::vector<uint32_t> kept(capacity);
  NeighbourCap cap{Span<uint32_t>(kept)};
  for (uint32_t id : ids) cap.Offer(id);
  const Span<uint32_t> out = cap.Finish();
  return std::vector<uint32_t>(out.begin(), out.end());
}

// The definition: the `capacity` ids of smallest public rank, sorted.
std::vector<uint32_t> Reference(std::vector<uint32_t> ids, size_t capacity) {
  std::sort(ids.begin(), ids.end(),
            [](uint32_t a, uint32_t b) { return PublicNeighbourRank(a) < PublicNeighbourRank(b); });
  if (ids.size() > capacity) ids.resize(capacity);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(NeighbourCapTest, KeepsTheSmallestPublicRanksWhateverTheOrder) {
  std::mt19937_64 gen(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::set<uint32_t> distinct;
    const size_t degree = 1 + gen() % 300;
    while (distinct.size() < degree) distinct.insert(static_cast<uint32_t>(gen() % 5000));
    std::vector<uint32_t> ids(distinct.begin(), distinct.end());
    std::shuffle(ids.begin(), ids.end(), gen);
    const size_t capacity = 1 + gen() % 120;
    const std::vector<uint32_t> got = Keep(ids, capacity);
    EXPECT_EQ(got, Reference(ids, capacity)) << "trial " << trial;
    std::reverse(ids.begin(), ids.end());
    EXPECT_EQ(Keep(ids, capacity), got) << "order matters in trial " << trial;
  }
}

TEST(NeighbourCapTest, OfferingTouchesNoHeapAndReportsTruncation) {
  std::vector<uint32_t> kept(4);
  NeighbourCap cap{Span<uint32_t>(kept)};
  NODEFL_EXPECT_NO_HEAP({
    for (uint32_t id = 100; id < 110; ++id) cap.Offer(id);
    (void)cap.Finish();
  });
  EXPECT_EQ(cap.offered(), 10u);
  EXPECT_TRUE(cap.truncated());
  std::vector<uint32_t> room(16);
  NeighbourCap roomy{Span<uint32_t>(room)};
  for (uint32_t id : {9u, 3u, 7u}) roomy.Offer(id);
  const Span<uint32_t> all = roomy.Finish();
  EXPECT_FALSE(roomy.truncated());
  EXPECT_EQ(std::vector<uint32_t>(all.begin(), all.end()), (std::vector<uint32_t>{3, 7, 9}));
}

TEST(NeighbourCapTest, OneEdgeChangesTheKeptListByAtMostTwo) {
  // Adding an edge brings at most one neighbour in and pushes at most one
  // out: the sensitivity factor of 2 is what truncation costs, and it is
  // reached.
  std::mt19937_64 gen(12);
  bool reached_two = false;
  for (int trial = 0; trial < 500; ++trial) {
    std::set<uint32_t> distinct;
    const size_t degree = 1 + gen() % 60;
    while (distinct.size() < degree) distinct.insert(static_cast<uint32_t>(gen() % 1000));
    std::vector<uint32_t> ids(distinct.begin(), distinct.end());
    uint32_t extra;
    do extra = static_cast<uint32_t>(gen() % 1000);
    while (distinct.count(extra) != 0);
    const size_t capacity = 1 + gen() % 40;
    const std::vector<uint32_t> before = Keep(ids, capacity);
    ids.push_back(extra);
    const std::vector<uint32_t> after = Keep(ids, capacity);
    std::vector<uint32_t> diff;
    std::set_symmetric_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(diff));
    EXPECT_LE(diff.size(), 2u);
    if (diff.size() == 2) reached_two = true;
    if (degree < capacity) {
      EXPECT_LE(diff.size(), 1u);  // no cut: one in, none out
    }
  }
  EXPECT_TRUE(reached_two);
}

TEST(NeighbourCapTest, SensitivityFactorDependsOnPublicNumbersOnly) {
  EXPECT_EQ(CapSensitivityFactor(10, 11), 1u);  // 10 = n - 1: never cut
  EXPECT_EQ(CapSensitivityFactor(9, 11), 2u);
  EXPECT_EQ(CapSensitivityFactor(100000, 10312), 1u);
  EXPECT_EQ(CapSensitivityFactor(4096, 10312), 2u);
  EXPECT_EQ(CapSensitivityFactor(0, 0), 1u);
  // The rank is a fixed bijection: distinct ids never tie.
  std::set<uint64_t> ranks;
  for (uint32_t id = 0; id < 100000; ++id) ranks.insert(PublicNeighbourRank(id));
  EXPECT_EQ(ranks.size(), 100000u);
}

}  // namespace
}  // namespace nodefl
