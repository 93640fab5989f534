// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/server/fedwalk/histogram_walks/cluster_histograms.h"
#include "nodefl/server/fedwalk/histogram_walks/cluster_partition.h"
#include "nodefl/server/fedwalk/histogram_walks/histogram_plan.h"
#include "nodefl/server/fedwalk/histogram_walks/spectral_partition.h"
#include "nodefl/server/fedwalk/histogram_walks/tree_cut.h"

namespace nodefl::server::fedwalk {
namespace {

using nodefl::fedwalk::kAbsentCluster;

TEST(ClusterPartitionTest, RandomPartitionIsBalancedCoversParticipantsOnlyAndFollowsTheSeed) {
  std::vector<uint32_t> participants;
  for (uint32_t v = 0; v < 103; ++v) {
    if (v % 10 != 3) participants.push_back(v);  // 3, 13, ... take no part
  }
  const auto p = RandomClusterPartition(participants, 110, 7, 42);
  ASSERT_EQ(p.size(), 110u);
  for (uint32_t v = 0; v < 110; ++v) {
    const bool in = std::find(participants.begin(), participants.end(), v) != participants.end();
    EXPECT_EQ(p[v] != kAbsentCluster, in) << v;
    if (in) {
      EXPECT_LT(p[v], 7);
    }
  }
  const auto sizes = ClusterSizes(p, 7);
  const uint32_t m = static_cast<uint32_t>(participants.size());
  for (uint32_t s : sizes) {
    EXPECT_GE(s, m / 7);
    EXPECT_LE(s, (m + 6) / 7);
  }
  EXPECT_EQ(RandomClusterPartition(participants, 110, 7, 42), p);
  EXPECT_NE(RandomClusterPartition(participants, 110, 7, 43), p);
  // One cluster per vertex: a permutation.
  const auto singletons = RandomClusterPartition(participants, 110, m, 1);
  const auto ones = ClusterSizes(singletons, m);
  EXPECT_TRUE(std::all_of(ones.begin(), ones.end(), [](uint32_t s) { return s == 1; }));
}

TEST(ClusterPartitionTest, ArtefactIsLittleEndianU16PerVertex) {
  const std::vector<uint16_t> p = {0x0102, kAbsentCluster, 7};
  EXPECT_EQ(EncodeClusterPartition(p), (std::vector<uint8_t>{0x02, 0x01, 0xFF, 0xFF, 7, 0}));
}

TEST(ClusterHistogramsTest, KeepsPositiveCellsOfInhabitedClustersOnly) {
  // Vertices 0..4; cluster 2 has no member.
  ClusterHistograms h({0, 1, 0, kAbsentCluster, 1}, 3);
  EXPECT_EQ(h.members(0).size(), 2u);
  EXPECT_EQ(h.members(2).size(), 0u);
  const int32_t row[] = {3, -2, 5};
  ASSERT_TRUE(h.SetRow(0, row));
  ASSERT_EQ(h.row(0).size(), 1u);
  EXPECT_EQ(h.row(0)[0].cluster, 0);
  EXPECT_EQ(h.row(0)[0].count, 3u);
  EXPECT_EQ(h.RowMass(0), 3u);
  EXPECT_FALSE(h.SetRow(3, row));                   // absent from the partition
  EXPECT_FALSE(h.SetRow(9, row));                   // out of range
  EXPECT_FALSE(h.SetRow(1, std::vector<int32_t>{1, 2}));  // wrong size
  EXPECT_TRUE(h.present(0));
  EXPECT_FALSE(h.present(1));
  EXPECT_EQ(h.present_count(), 1u);
}

TEST(HistogramPlanTest, ReleasesSumToTheTotalAndClusterCountsStayInRange) {
  HistogramPlanOptions o;
  o.total_epsilon = 6;
  auto one = PlanReleases(o, 10312);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].epsilon, 6.0);
  EXPECT_EQ((*one)[0].clusters, DefaultClusters(6, 10312));
  o.scheme = PartitionScheme::kRefined;
  o.first_share = 0.25;
  o.clusters = 64;
  auto two = PlanReleases(o, 10312);
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_DOUBLE_EQ((*two)[0].epsilon + (*two)[1].epsilon, 6.0);
  EXPECT_DOUBLE_EQ((*two)[0].epsilon, 1.5);
  EXPECT_EQ((*two)[1].clusters, 64u);
  for (double e : {0.01, 0.5, 1.0, 2.0, 4.0, 8.0, 50.0}) {
    for (uint32_t n : {1u, 34u, 2708u, 10312u, 100000u}) {
      const uint32_t c = DefaultClusters(e, n);
      EXPECT_GE(c, 1u);
      EXPECT_LE(c, std::min<uint32_t>(n, nodefl::fedwalk::kMaxClusters));
    }
  }
  o.first_share = 1.0;
  EXPECT_FALSE(PlanReleases(o, 10));
  o.first_share = 0.5;
  o.total_epsilon = 0;
  EXPECT_FALSE(PlanReleases(o, 10));
  o.total_epsilon = 1;
  EXPECT_FALSE(PlanReleases(o, 0));
}

TEST(SpectralPartitionTest, RecoversTwoPlantedCommunitiesFromFirstRoundCounts) {
  // 200 vertices in two communities (even and odd ids); each vertex has 40
  // neighbours inside its community and 4 outside. The first partition's
  // 10 clusters mix the communities 3:1 (clusters 0-4 hold three quarters
  // of the even ids, 5-9 of the odd ones), so the counts carry the
  // communities only through that mixture; the refinement must recover
  // them (a per-vertex likelihood ratio test would err with probability
  // below 1e-4 here).
  const uint32_t n = 200, c0 = 10;
  std::vector<uint16_t> p0(n);
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t k = v / 2;
    const bool minority = k % 4 == 0;
    const bool even = v % 2 == 0;
    p0[v] = static_cast<uint16_t>((even != minority ? 0 : 5) + k % 5);
  }
  ClusterHistograms h(p0, c0);
  uint64_t state = 99;
  auto next = [&state](uint32_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((state >> 33) % bound);
  };
  for (uint32_t v = 0; v < n; ++v) {
    std::vector<int32_t> row(c0, 0);
    const uint32_t mine = v % 2;
    for (int k = 0; k < 40; ++k) ++row[p0[2 * next(n / 2) + mine]];
    for (int k = 0; k < 4; ++k) ++row[p0[2 * next(n / 2) + 1 - mine]];
    ASSERT_TRUE(h.SetRow(v, row));
  }
  RefineOptions o;
  o.dims = 4;
  const auto refined = RefinePartition(h, 2, o);
  uint32_t agree = 0;
  for (uint32_t v = 0; v < n; ++v) agree += refined[v] == v % 2 ? 1 : 0;
  EXPECT_GE(std::max(agree, n - agree), 198u);  // labels may come out swapped
  // Power: against the ids' halves (no relation to the communities) the
  // same partition agrees only about half the time.
  uint32_t halves = 0;
  for (uint32_t v = 0; v < n; ++v) halves += refined[v] == (v < n / 2 ? 1u : 0u) ? 1 : 0;
  EXPECT_LE(std::max(halves, n - halves), 130u);
}

TEST(TreeCutTest, UndoesTheHighestMergesOnly) {
  // Leaves 0..4 are vertices 10, 11, 12, 13, 14; merges by height:
  // (0,1) -> 5, (2,3) -> 6, (5,6) -> 7, (4,7) -> 8.
  const std::vector<Merge> merges = {{0, 1, 1.0, 2}, {2, 3, 2.0, 2}, {5, 6, 3.0, 4}, {4, 7, 4.0, 5}};
  const auto tree = HctTree::FromMerges(merges, {10, 11, 12, 13, 14});
  ASSERT_TRUE(tree);
  auto cut = [&](uint32_t c) { return CutTreeIntoClusters(*tree, 16, c); };
  const auto two = cut(2);  // {10..13}, {14}
  EXPECT_EQ(two[10], two[13]);
  EXPECT_NE(two[10], two[14]);
  const auto three = cut(3);  // {10, 11}, {12, 13}, {14}
  EXPECT_EQ(three[10], three[11]);
  EXPECT_EQ(three[12], three[13]);
  EXPECT_NE(three[10], three[12]);
  EXPECT_NE(three[12], three[14]);
  EXPECT_EQ(ClusterSizes(three, 3), (std::vector<uint32_t>{2, 2, 1}));
  const auto all = cut(99);  // capped at the leaves: one each
  EXPECT_EQ(ClusterSizes(all, 5), (std::vector<uint32_t>(5, 1)));
  EXPECT_EQ(all[0], kAbsentCluster);  // not a leaf
  EXPECT_EQ(cut(1)[12], 0);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
