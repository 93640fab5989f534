// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The measures of kCAGC Sec. 4: the Hungarian matching equals brute force
// over every permutation (square and rectangular), and accuracy, NMI
// (arithmetic normalisation) and macro-F1 take their hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "nodefl/kcagc/rng.h"
#include "nodefl/server/kcagc/hungarian.h"
#include "nodefl/server/kcagc/metrics.h"

namespace nodefl::server::kcagc {
namespace {

double CostOf(const std::vector<double>& cost, uint32_t cols, const std::vector<int32_t>& col_of) {
  double total = 0;
  for (size_t r = 0; r < col_of.size(); ++r) {
    if (col_of[r] >= 0) total += cost[r * cols + static_cast<size_t>(col_of[r])];
  }
  return total;
}

// The least cost over every injective map from the smaller side to the larger.
double BruteForce(const std::vector<double>& cost, uint32_t rows, uint32_t cols) {
  const uint32_t small = std::min(rows, cols), large = std::max(rows, cols);
  std::vector<uint32_t> perm(large);
  std::iota(perm.begin(), perm.end(), 0u);
  double best = INFINITY;
  do {
    double total = 0;
    for (uint32_t i = 0; i < small; ++i) {
      total += rows <= cols ? cost[static_cast<size_t>(i) * cols + perm[i]] : cost[static_cast<size_t>(perm[i]) * cols + i];
    }
    best = std::min(best, total);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(HungarianTest, EqualsBruteForceOverAllPermutations) {
  nodefl::kcagc::SplitMix64 rng(2024);
  int cases = 0;
  for (uint32_t rows = 1; rows <= 7; ++rows) {
    for (uint32_t cols = 1; cols <= 7; ++cols) {
      if (std::max(rows, cols) > 7) continue;
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<double> cost(static_cast<size_t>(rows) * cols);
        // Small integers make ties common, where a wrong algorithm slips.
        for (double& c : cost) c = trial % 2 == 0 ? static_cast<double>(rng.Below(5)) : rng.Uniform() * 100 - 50;
        const std::vector<int32_t> col_of = MinCostAssignment(cost, rows, cols);
        ASSERT_EQ(col_of.size(), rows);
        // Distinct columns; exactly min(rows, cols) rows matched.
        std::vector<int32_t> used;
        for (int32_t c : col_of) {
          if (c >= 0) used.push_back(c);
        }
        std::sort(used.begin(), used.end());
        EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end());
        EXPECT_EQ(used.size(), std::min(rows, cols));
        EXPECT_NEAR(CostOf(cost, cols, col_of), BruteForce(cost, rows, cols), 1e-9)
            << rows << "x" << cols << " trial " << trial;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 7 * 7 * 6);
}

TEST(MetricsTest, PerfectAndPermutedClusteringsScoreOne) {
  const std::vector<int32_t> labels = {0, 0, 1, 1, 2, 2, 2};
  const std::vector<int32_t> clusters = {2, 2, 0, 0, 1, 1, 1};
  const ClusteringScores s = ScoreClustering(clusters, labels).value();
  EXPECT_DOUBLE_EQ(s.accuracy, 1.0);
  EXPECT_NEAR(s.nmi, 1.0, 1e-12);
  EXPECT_NEAR(s.macro_f1, 1.0, 1e-12);
  EXPECT_EQ(s.scored, 7u);
}

TEST(MetricsTest, IndependentClusteringsHaveZeroNmi) {
  // Each cluster holds each class equally: I(U;V) = 0.
  const std::vector<int32_t> labels = {0, 1, 0, 1};
  const std::vector<int32_t> clusters = {0, 0, 1, 1};
  const ClusteringScores s = ScoreClustering(clusters, labels).value();
  EXPECT_NEAR(s.nmi, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.accuracy, 0.5);
  EXPECT_NEAR(s.macro_f1, 0.5, 1e-12);  // each class: precision 1/2, recall 1/2
}

TEST(MetricsTest, HandComputedValues) {
  // Clusters {0,1,2}: classes 0,0,1; {3,4,5}: classes 1,2,2.
  //   matching: cluster 0 -> class 0 (2), cluster 1 -> class 2 (2): accuracy 4/6.
  //   H(U) = ln 2; H(V) = ln 3 (2,2,2);
  //   I = Σ p_rc ln(p_rc / (p_r p_c)) = 2 (2/6) ln((2/6)/(1/2 · 1/3)) + 2 (1/6) ln((1/6)/(1/6))
  //     = (2/3) ln 2;  NMI = (2/3) ln 2 / ((ln 2 + ln 3) / 2).
  //   F1: class 0: P 2/3, R 1 -> 0.8; class 2: P 2/3, R 1 -> 0.8; class 1: no cluster -> 0.
  const std::vector<int32_t> clusters = {0, 0, 0, 1, 1, 1};
  const std::vector<int32_t> labels = {0, 0, 1, 1, 2, 2};
  const ClusteringScores s = ScoreClustering(clusters, labels).value();
  EXPECT_NEAR(s.accuracy, 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(s.nmi, (2.0 / 3.0) * std::log(2.0) / ((std::log(2.0) + std::log(3.0)) / 2.0), 1e-12);
  EXPECT_NEAR(s.macro_f1, (0.8 + 0.8 + 0.0) / 3.0, 1e-12);
  EXPECT_EQ(s.clusters, 2u);
  EXPECT_EQ(s.classes, 3u);
}

TEST(MetricsTest, MoreClustersThanClassesLeavesExtraClustersWrong) {
  // Three clusters, two classes: the third cluster matches nothing.
  const std::vector<int32_t> clusters = {0, 0, 1, 1, 2, 2};
  const std::vector<int32_t> labels = {0, 0, 1, 1, 1, 1};
  const ClusteringScores s = ScoreClustering(clusters, labels).value();
  EXPECT_NEAR(s.accuracy, 4.0 / 6.0, 1e-12);
  // class 0: P 1, R 1 -> 1; class 1: matched cluster of 2 of its 4 -> P 1, R 1/2 -> 2/3.
  EXPECT_NEAR(s.macro_f1, (1.0 + 2.0 / 3.0) / 2.0, 1e-12);
}

TEST(MetricsTest, UnlabelledNodesAreLeftOutAndBadInputRefused) {
  const ClusteringScores s = ScoreClustering(std::vector<int32_t>{0, 1, 1}, std::vector<int32_t>{0, -1, 1}).value();
  EXPECT_EQ(s.scored, 2u);
  EXPECT_DOUBLE_EQ(s.accuracy, 1.0);
  EXPECT_FALSE(ScoreClustering(std::vector<int32_t>{0, -1}, std::vector<int32_t>{0, 0}).ok());
  EXPECT_FALSE(ScoreClustering(std::vector<int32_t>{0}, std::vector<int32_t>{0, 0}).ok());
  EXPECT_FALSE(ScoreClustering(std::vector<int32_t>{0}, std::vector<int32_t>{-1}).ok());
  // Both one group: NMI 1 by convention.
  EXPECT_DOUBLE_EQ(ScoreClustering(std::vector<int32_t>{0, 0}, std::vector<int32_t>{1, 1}).value().nmi, 1.0);
}

}  // namespace
}  // namespace nodefl::server::kcagc
