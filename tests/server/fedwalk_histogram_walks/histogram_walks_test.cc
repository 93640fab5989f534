// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The walks strict FedWalk's server generates from cluster histograms
// (histogram_walks.h): their transition law against the documented formula
// for both rules (chi-square, fixed seeds), the reciprocal rule's filter,
// dead ends, determinism and option checks.
#include "nodefl/server/fedwalk/histogram_walks/histogram_walks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

using nodefl::fedwalk::kAbsentCluster;

// Counts of next vertices after every visit of `from` in the corpus.
std::map<uint32_t, double> Transitions(const WalkCorpus& corpus, uint32_t from) {
  std::map<uint32_t, double> next;
  for (size_t i = 0; i < corpus.num_walks(); ++i) {
    const auto walk = corpus.Walk(i);
    for (size_t k = 0; k + 1 < walk.size(); ++k) {
      if (walk[k] == from) next[walk[k + 1]] += 1;
    }
  }
  return next;
}

// Pearson's test of observed transitions against probabilities `p` (which
// must cover every observed vertex: a step to a vertex of probability 0
// fails the test outright).
::testing::AssertionResult FitsLaw(const std::map<uint32_t, double>& observed, const std::map<uint32_t, double>& p) {
  double total = 0;
  for (const auto& [w, count] : observed) {
    if (p.count(w) == 0 || p.at(w) <= 0) return ::testing::AssertionFailure() << "step to " << w << " of probability 0";
    total += count;
  }
  std::vector<double> o, e;
  for (const auto& [w, pw] : p) {
    if (pw <= 0) continue;
    o.push_back(observed.count(w) ? observed.at(w) : 0.0);
    e.push_back(pw * total);
    if (e.back() < 5) return ::testing::AssertionFailure() << "expected count below 5 for " << w;
  }
  if (o.size() == 1) return ::testing::AssertionSuccess();  // one outcome, and every step took it
  const double stat = testing::ChiSquareStatistic(o, e);
  const double critical = testing::ChiSquareCritical(static_cast<int>(o.size()) - 1);
  if (stat < critical) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "chi2 " << stat << " >= " << critical << " over " << total << " steps";
}

// A ring of 12 vertices with chords: every vertex v is joined to v +- 1 and
// v +- 3 (mod 12). Histograms against the identity partition hold the
// exact adjacency rows.
ClusterHistograms ExactRing() {
  const uint32_t n = 12;
  std::vector<uint16_t> identity(n);
  std::iota(identity.begin(), identity.end(), uint16_t{0});
  ClusterHistograms h(identity, n);
  for (uint32_t v = 0; v < n; ++v) {
    std::vector<int32_t> row(n, 0);
    for (uint32_t d : {1u, 3u, n - 1, n - 3}) row[(v + d) % n] = 1;
    EXPECT_TRUE(h.SetRow(v, row));
  }
  return h;
}

HistogramWalkOptions Options(HistogramWalkRule rule, uint32_t gamma = 400) {
  HistogramWalkOptions o;
  o.walks_per_vertex = gamma;
  o.walk_length = 10;
  o.rule = rule;
  o.threads = 2;
  o.seed = 17;
  return o;
}

TEST(HistogramWalksTest, OneVertexPerClusterAndExactCountsGiveDeepWalksTransitions) {
  const ClusterHistograms h = ExactRing();
  for (HistogramWalkRule rule : {HistogramWalkRule::kDirect, HistogramWalkRule::kReciprocal}) {
    HistogramWalkStats stats;
    const auto corpus = GenerateHistogramWalks(h, Options(rule), {}, &stats);
    ASSERT_TRUE(corpus);
    EXPECT_EQ(stats.walks, 12u * 400);
    EXPECT_EQ(stats.dead_ends, 0u);
    EXPECT_EQ(stats.fallback_steps, 0u);
    EXPECT_EQ(corpus->num_tokens(), 12u * 400 * 10);
    for (uint32_t v : {0u, 5u}) {
      const std::map<uint32_t, double> uniform = {
          {(v + 1) % 12, 0.25}, {(v + 3) % 12, 0.25}, {(v + 11) % 12, 0.25}, {(v + 9) % 12, 0.25}};
      EXPECT_TRUE(FitsLaw(Transitions(*corpus, v), uniform)) << HistogramWalkRuleName(rule) << " from " << v;
    }
  }
}

TEST(HistogramWalksTest, PowerAWrongLawIsRejected) {
  const auto corpus = GenerateHistogramWalks(ExactRing(), Options(HistogramWalkRule::kReciprocal));
  ASSERT_TRUE(corpus);
  const std::map<uint32_t, double> skewed = {{1, 0.31}, {3, 0.23}, {11, 0.23}, {9, 0.23}};
  EXPECT_FALSE(FitsLaw(Transitions(*corpus, 0), skewed));
}

TEST(HistogramWalksTest, TheReciprocalRuleNeverWalksAnEdgeOneEndpointDenies) {
  // Vertex 0's noise claims vertex 6 (a count of 4, clipped to 1: a
  // cluster of one vertex holds at most one neighbour); vertex 6 reports no
  // edge back. The direct rule walks 0 -> 6; the reciprocal one never does.
  ClusterHistograms h = ExactRing();
  std::vector<int32_t> row(12, 0);
  for (uint32_t w : {1u, 3u, 11u, 9u}) row[w] = 1;
  row[6] = 4;
  ASSERT_TRUE(h.SetRow(0, row));
  const auto direct = GenerateHistogramWalks(h, Options(HistogramWalkRule::kDirect));
  const auto reciprocal = GenerateHistogramWalks(h, Options(HistogramWalkRule::kReciprocal));
  ASSERT_TRUE(direct && reciprocal);
  // Direct: every claimed cluster weighs 1, so 1/5 each, 6 included.
  EXPECT_TRUE(FitsLaw(Transitions(*direct, 0), {{1, 0.2}, {3, 0.2}, {11, 0.2}, {9, 0.2}, {6, 0.2}}));
  EXPECT_TRUE(FitsLaw(Transitions(*reciprocal, 0), {{1, 0.25}, {3, 0.25}, {11, 0.25}, {9, 0.25}}));
}

TEST(HistogramWalksTest, CoarseClustersFollowTheDocumentedFormula) {
  // 6 vertices in 3 clusters {0,1}, {2,3}, {4,5} and chosen counts, some
  // beyond what a cluster can hold. W[v][c] = min(h, |c| - [v in c]);
  // B[c][s] = sum over w in c of W[w][s].
  const std::vector<uint16_t> part = {0, 0, 1, 1, 2, 2};
  const std::vector<std::vector<int32_t>> w = {
      {1, 3, 0}, {0, 1, 2}, {2, 0, 1}, {4, 0, 0}, {0, 1, 1}, {2, 0, -3}};
  ClusterHistograms h(part, 3);
  for (uint32_t v = 0; v < 6; ++v) ASSERT_TRUE(h.SetRow(v, w[v]));
  auto W = [&](uint32_t v, uint32_t c) { return std::clamp(w[v][c], 0, part[v] == c ? 1 : 2); };
  auto B = [&](uint32_t c, uint32_t s) {
    double b = 0;
    for (uint32_t x = 0; x < 6; ++x) b += part[x] == c ? W(x, s) : 0;
    return b;
  };
  for (HistogramWalkRule rule : {HistogramWalkRule::kDirect, HistogramWalkRule::kReciprocal}) {
    const auto corpus = GenerateHistogramWalks(h, Options(rule, 3000));
    ASSERT_TRUE(corpus);
    for (uint32_t v = 0; v < 6; ++v) {
      const uint32_t s = part[v];
      // P(c | v) per rule, then P(x | c) = W[x][s] / B[c][s].
      std::vector<double> pc(3, 0);
      double z = 0;
      for (uint32_t c = 0; c < 3; ++c) {
        double x = W(v, c);
        if (rule == HistogramWalkRule::kReciprocal) x = B(c, s) > 0 ? x * 2 * B(c, s) / (B(c, s) + B(s, c)) : 0;
        pc[c] = x;
        z += x;
      }
      std::map<uint32_t, double> law;
      for (uint32_t x = 0; x < 6; ++x) {
        const uint32_t c = part[x];
        if (z <= 0 || pc[c] <= 0) continue;
        // Direct with B = 0 falls back to uniform over c's two members.
        const double within = B(c, s) > 0 ? W(x, s) / B(c, s) : 0.5;
        if (within > 0) law[x] += pc[c] / z * within;
      }
      EXPECT_TRUE(FitsLaw(Transitions(*corpus, v), law)) << HistogramWalkRuleName(rule) << " from " << v;
    }
  }
}

TEST(HistogramWalksTest, AVertexWithNothingToStandOnEndsItsWalks) {
  // Vertex 3 uploads only noise that nobody answers: a dead end. Walks
  // that start there hold just it.
  std::vector<uint16_t> identity = {0, 1, 2, 3};
  ClusterHistograms h(identity, 4);
  ASSERT_TRUE(h.SetRow(0, std::vector<int32_t>{0, 1, 0, 0}));
  ASSERT_TRUE(h.SetRow(1, std::vector<int32_t>{1, 0, 1, 0}));
  ASSERT_TRUE(h.SetRow(2, std::vector<int32_t>{0, 1, 0, 0}));
  ASSERT_TRUE(h.SetRow(3, std::vector<int32_t>{0, 0, -2, 0}));
  HistogramWalkStats stats;
  const auto corpus = GenerateHistogramWalks(h, Options(HistogramWalkRule::kReciprocal, 5), {}, &stats);
  ASSERT_TRUE(corpus);
  EXPECT_EQ(stats.dead_ends, 5u);
  for (size_t i = 0; i < corpus->num_walks(); ++i) {
    const auto walk = corpus->Walk(i);
    if (walk[0] == 3) {
      EXPECT_EQ(walk.size(), 1u);
    } else {
      EXPECT_EQ(walk.size(), 10u);
      for (uint32_t x : walk) EXPECT_NE(x, 3u);
    }
  }
}

TEST(HistogramWalksTest, TheCorpusDependsOnTheSeedNotOnTheThreads) {
  const ClusterHistograms h = ExactRing();
  HistogramWalkOptions o = Options(HistogramWalkRule::kReciprocal, 20);
  o.threads = 1;
  const auto one = GenerateHistogramWalks(h, o);
  o.threads = 3;
  const auto three = GenerateHistogramWalks(h, o);
  o.seed = 18;
  const auto other = GenerateHistogramWalks(h, o);
  ASSERT_TRUE(one && three && other);
  EXPECT_EQ(one->tokens(), three->tokens());
  EXPECT_EQ(one->offsets(), three->offsets());
  EXPECT_NE(one->tokens(), other->tokens());
}

TEST(HistogramWalksTest, BadOptionsAndEmptyInputsAreRefused) {
  const ClusterHistograms h = ExactRing();
  std::string error;
  HistogramWalkOptions o = Options(HistogramWalkRule::kReciprocal);
  o.walk_length = 0;
  EXPECT_FALSE(GenerateHistogramWalks(h, o, {}, nullptr, &error));
  EXPECT_NE(error.find("at least 1"), std::string::npos);
  o = Options(HistogramWalkRule::kReciprocal);
  o.min_count = 0;
  EXPECT_FALSE(GenerateHistogramWalks(h, o));
  const ClusterHistograms nobody(std::vector<uint16_t>(5, 0), 1);
  EXPECT_FALSE(GenerateHistogramWalks(nobody, Options(HistogramWalkRule::kDirect), {}, nullptr, &error));
  EXPECT_NE(error.find("no vertex"), std::string::npos);
  EXPECT_EQ(ParseHistogramWalkRule("reciprocal"), HistogramWalkRule::kReciprocal);
  EXPECT_EQ(ParseHistogramWalkRule("direct"), HistogramWalkRule::kDirect);
  EXPECT_FALSE(ParseHistogramWalkRule("uniform"));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
