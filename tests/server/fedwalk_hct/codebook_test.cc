// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The Eq. 12 codebook against probabilities computed here from the matrix
// and the naive LCA counts: sampling through the device's alias sampler,
// the top-K choice, the truncated mass and the alias tables themselves.
#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/server/fedwalk/hct/codebook.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hct_test_support.h"
#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

using nodefl::fedwalk::CodebookEntry;
using nodefl::fedwalk::kQ31One;

struct Job {
  CondensedMatrix dissim;
  HctTree tree;
  uint32_t vertex_count = 0;
};

// levels > 0: integer dissimilarities 0 .. levels-1, so scores tie.
Job MakeJob(uint64_t seed, uint32_t m, uint32_t vertex_count, uint32_t levels = 0) {
  Drbg rng;
  test::Seed(rng, seed, m);
  Job job;
  job.dissim = test::RandomMatrix(rng, m, levels);
  CondensedMatrix copy = job.dissim;
  const std::vector<Merge> merges = ClusterNnChain(std::move(copy)).value();
  job.tree = HctTree::FromMerges(merges, test::RandomLeafVertices(rng, m, vertex_count)).value();
  job.vertex_count = vertex_count;
  return job;
}

Codebook BuildOrFail(const Job& job, const CodebookOptions& options) {
  std::optional<Codebook> cb = Codebook::Build(job.dissim, job.tree, job.vertex_count, options);
  EXPECT_TRUE(cb.has_value());
  return cb.value_or(Codebook{});
}

// log Pr[x | leaf] + const for every leaf x, straight from Eq. 10-12, with
// the score clipped to [-clip, 0] when clip > 0.
std::vector<double> LogWeights(const Job& job, uint32_t leaf, double exponent, bool with_lca = true,
                               double clip = 0) {
  std::vector<double> lw(job.tree.leaf_count());
  for (uint32_t x = 0; x < lw.size(); ++x) {
    const double lca = with_lca ? job.tree.LcaLeafCount(leaf, x) : 1.0;
    const double score = -double{job.dissim.at(leaf, x)} * lca;
    lw[x] = exponent * (clip > 0 ? std::max(score, -clip) : score);
  }
  return lw;
}

// Leaves by decreasing probability, ties by smaller vertex id.
std::vector<uint32_t> ByProbability(const Job& job, const std::vector<double>& lw) {
  std::vector<uint32_t> order(lw.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return lw[a] != lw[b] ? lw[a] > lw[b] : job.tree.leaf_vertex(a) < job.tree.leaf_vertex(b);
  });
  return order;
}

// Probability the alias table gives each entry: its own accepted share of
// its slot plus the rejected shares of the slots aliasing to it.
std::vector<double> ImpliedProbabilities(std::span<const CodebookEntry> row) {
  std::vector<double> p(row.size(), 0.0);
  const double slot = 1.0 / static_cast<double>(row.size());
  for (const CodebookEntry& e : row) {
    const double accept = static_cast<double>(e.accept_q31) / kQ31One;
    p[&e - row.data()] += slot * accept;
    if (e.alias < row.size()) p[e.alias] += slot * (1.0 - accept);
  }
  return p;
}

// Pearson's statistic with cells of expected count < 5 pooled (smallest
// first) so the chi-square approximation holds; returns {statistic, df}.
std::pair<double, int> PooledChiSquare(const std::vector<double>& observed, const std::vector<double>& expected) {
  std::vector<size_t> order(observed.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return expected[a] < expected[b]; });
  std::vector<double> obs;
  std::vector<double> exp;
  double pool_obs = 0;
  double pool_exp = 0;
  for (size_t i : order) {
    pool_obs += observed[i];
    pool_exp += expected[i];
    if (pool_exp >= 5) {
      obs.push_back(pool_obs);
      exp.push_back(pool_exp);
      pool_obs = pool_exp = 0;
    }
  }
  if (pool_exp > 0) {  // leftovers join the last cell
    obs.back() += pool_obs;
    exp.back() += pool_exp;
  }
  return {nodefl::testing::ChiSquareStatistic(obs, exp), static_cast<int>(obs.size()) - 1};
}

// Draws from the row of `leaf` through the device's sampler, counted per
// leaf. Fails the test if a draw is not a leaf's vertex.
std::vector<double> DrawCounts(const Job& job, const Codebook& cb, uint32_t leaf, int draws, Drbg& rng) {
  const std::span<const CodebookEntry> row = cb.row(job.tree.leaf_vertex(leaf));
  std::vector<uint32_t> leaf_of(job.vertex_count, 0xFFFFFFFFu);
  for (uint32_t x = 0; x < job.tree.leaf_count(); ++x) leaf_of[job.tree.leaf_vertex(x)] = x;
  std::vector<double> observed(job.tree.leaf_count(), 0.0);
  for (int i = 0; i < draws; ++i) {
    const Result<uint32_t> v = nodefl::fedwalk::SampleCodebookRow(row, rng);
    EXPECT_TRUE(v.ok());
    if (!v.ok() || v.value() >= job.vertex_count || leaf_of[v.value()] == 0xFFFFFFFFu) {
      ADD_FAILURE() << "draw " << i << " is not a leaf's vertex";
      break;
    }
    observed[leaf_of[v.value()]] += 1;
  }
  return observed;
}

// K >= m: nothing is truncated and the device's draws must follow Eq. 12.
TEST(CodebookTest, SamplingMatchesEquation12WhenNothingIsTruncated) {
  constexpr double kEpsilon = 0.3;  // spreads the mass over most of the 12 leaves
  const Job job = MakeJob(11, 12, 20);
  const Codebook cb = BuildOrFail(job, {.epsilon = kEpsilon, .k = 32});
  EXPECT_EQ(cb.max_truncated_mass(), 0.0);

  Drbg rng;
  test::Seed(rng, 314159);
  constexpr int kDraws = 200000;
  for (uint32_t leaf : {0u, 5u, 11u}) {
    const uint32_t vertex = job.tree.leaf_vertex(leaf);
    ASSERT_EQ(cb.row(vertex).size(), 12u);
    EXPECT_EQ(cb.truncated_mass(vertex), 0.0);
    const std::vector<double> observed = DrawCounts(job, cb, leaf, kDraws, rng);
    const auto expected_for = [&](bool with_lca) {
      std::vector<double> e = nodefl::testing::NormalizedLogWeights(LogWeights(job, leaf, kEpsilon, with_lca));
      for (double& x : e) x *= kDraws;
      return e;
    };
    const auto [stat, df] = PooledChiSquare(observed, expected_for(true));
    EXPECT_LT(stat, nodefl::testing::ChiSquareCritical(df)) << "leaf " << leaf << " df " << df;
    // Power: the same draws clearly reject the score without the LCA
    // factor, a plausible misreading of Eq. 10.
    const auto [wrong, wrong_df] = PooledChiSquare(observed, expected_for(false));
    EXPECT_GT(wrong, nodefl::testing::ChiSquareCritical(wrong_df)) << "leaf " << leaf;
  }
}

// Every row: top-K entries in order, truncated mass = 1 - their exact
// probability, alias table = their probabilities renormalised.
void ExpectRowsMatchEquation12(const Job& job, const Codebook& cb, double exponent, uint32_t k, double clip = 0) {
  for (uint32_t leaf = 0; leaf < job.tree.leaf_count(); ++leaf) {
    SCOPED_TRACE(::testing::Message() << "leaf " << leaf);
    const std::vector<double> lw = LogWeights(job, leaf, exponent, /*with_lca=*/true, clip);
    const std::vector<double> p = nodefl::testing::NormalizedLogWeights(lw);
    const std::vector<uint32_t> order = ByProbability(job, lw);
    const std::span<const CodebookEntry> row = cb.row(job.tree.leaf_vertex(leaf));
    const size_t kept = std::min<size_t>(k, lw.size());
    ASSERT_EQ(row.size(), kept);
    double kept_mass = 0;
    for (size_t j = 0; j < kept; ++j) {
      EXPECT_EQ(row[j].vertex, job.tree.leaf_vertex(order[j])) << "entry " << j;
      kept_mass += p[order[j]];
    }
    EXPECT_NEAR(cb.truncated_mass(job.tree.leaf_vertex(leaf)), 1.0 - kept_mass, 1e-6);
    const std::vector<double> implied = ImpliedProbabilities(row);
    for (size_t j = 0; j < kept; ++j) EXPECT_NEAR(implied[j], p[order[j]] / kept_mass, 1e-6) << "entry " << j;
  }
}

TEST(CodebookTest, FullRowsMatchEquation12) {
  const Job job = MakeJob(12, 30, 30);
  ExpectRowsMatchEquation12(job, BuildOrFail(job, {.epsilon = 0.5, .k = 30}), 0.5, 30);
}

TEST(CodebookTest, TruncatedRowsMatchEquation12) {
  const Job job = MakeJob(13, 40, 45);
  const Codebook cb = BuildOrFail(job, {.epsilon = 0.2, .k = 4});
  ExpectRowsMatchEquation12(job, cb, 0.2, 4);
  // With 4 of 40 leaves kept at this epsilon most mass is dropped: the
  // check above compared real numbers, not zeros.
  EXPECT_GT(cb.max_truncated_mass(), 0.3);
  // K just below m: a single leaf is dropped per row.
  ExpectRowsMatchEquation12(job, BuildOrFail(job, {.epsilon = 0.2, .k = 39}), 0.2, 39);
  ExpectRowsMatchEquation12(job, BuildOrFail(job, {.epsilon = 0.2, .k = 25}), 0.2, 25);
}

// Integer dissimilarities make whole subtrees score alike; the row keeps
// the smaller vertex ids among equals (leaf order differs from id order
// here, so keeping smaller leaf indices would fail).
TEST(CodebookTest, TiesGoToTheSmallerVertexId) {
  constexpr double kEpsilon = 0.5;
  constexpr uint32_t kK = 5;
  const Job job = MakeJob(19, 30, 40, /*levels=*/3);
  ExpectRowsMatchEquation12(job, BuildOrFail(job, {.epsilon = kEpsilon, .k = kK}), kEpsilon, kK);
  int ties_at_the_cut = 0;
  for (uint32_t leaf = 0; leaf < 30; ++leaf) {
    const std::vector<double> lw = LogWeights(job, leaf, kEpsilon);
    const std::vector<uint32_t> order = ByProbability(job, lw);
    ties_at_the_cut += lw[order[kK - 1]] == lw[order[kK]];
  }
  EXPECT_GT(ties_at_the_cut, 5);
}

// Tiny dropped masses keep their relative precision (1 - kept would be
// rounding noise of ~1e-16 there).
TEST(CodebookTest, SmallTruncatedMassIsRelativelyAccurate) {
  constexpr double kEpsilon = 30;
  const Job job = MakeJob(14, 40, 40);
  // min_probability 0: keep all K, so the dropped mass is exactly the tail.
  const Codebook cb = BuildOrFail(job, {.epsilon = kEpsilon, .k = 6, .min_probability = 0});
  int tiny = 0;
  for (uint32_t leaf = 0; leaf < 40; ++leaf) {
    const std::vector<double> lw = LogWeights(job, leaf, kEpsilon);
    const std::vector<double> p = nodefl::testing::NormalizedLogWeights(lw);
    const std::vector<uint32_t> order = ByProbability(job, lw);
    double dropped = 0;
    for (size_t j = 6; j < order.size(); ++j) dropped += p[order[j]];
    const double got = cb.truncated_mass(job.tree.leaf_vertex(leaf));
    if (dropped < 1e-30) continue;  // below float's comfortable range
    EXPECT_NEAR(got / dropped, 1.0, 1e-5) << "leaf " << leaf << " dropped " << dropped;
    tiny += dropped < 1e-10;
  }
  EXPECT_GT(tiny, 0);
}

// Entries below min_probability leave the row and count as truncated mass;
// at least the most probable entry always stays.
TEST(CodebookTest, NegligibleEntriesJoinTheTruncatedMass) {
  constexpr double kEpsilon = 30;
  constexpr double kCut = 1e-6;
  const Job job = MakeJob(14, 40, 40);
  const Codebook cb = BuildOrFail(job, {.epsilon = kEpsilon, .k = 6, .min_probability = kCut});
  int shortened = 0;
  for (uint32_t leaf = 0; leaf < 40; ++leaf) {
    const std::vector<double> lw = LogWeights(job, leaf, kEpsilon);
    const std::vector<double> p = nodefl::testing::NormalizedLogWeights(lw);
    const std::vector<uint32_t> order = ByProbability(job, lw);
    size_t expected = 1;
    while (expected < 6 && p[order[expected]] >= kCut) ++expected;
    const uint32_t v = job.tree.leaf_vertex(leaf);
    ASSERT_EQ(cb.row(v).size(), expected) << "leaf " << leaf;
    double dropped = 0;
    for (size_t j = expected; j < order.size(); ++j) dropped += p[order[j]];
    EXPECT_NEAR(cb.truncated_mass(v), dropped, 1e-6 * std::max(dropped, 1e-3)) << "leaf " << leaf;
    for (size_t j = 0; j < expected; ++j) EXPECT_EQ(cb.row(v)[j].vertex, job.tree.leaf_vertex(order[j]));
    shortened += expected < 6;
  }
  EXPECT_GT(shortened, 0);  // the case is exercised
}

TEST(CodebookTest, AbsentVerticesHaveEmptyRows) {
  const Job job = MakeJob(15, 10, 25);
  const Codebook cb = BuildOrFail(job, {.epsilon = 1.0, .k = 3});
  EXPECT_EQ(cb.vertex_count(), 25u);
  EXPECT_EQ(cb.k(), 3u);
  std::vector<bool> present(25, false);
  for (uint32_t v : job.tree.leaf_vertices()) present[v] = true;
  double max_mass = 0;
  for (uint32_t v = 0; v < 25; ++v) {
    EXPECT_EQ(cb.row(v).size(), present[v] ? 3u : 0u) << "vertex " << v;
    if (!present[v]) {
      EXPECT_EQ(cb.truncated_mass(v), 0.0);
    }
    max_mass = std::max(max_mass, cb.truncated_mass(v));
  }
  EXPECT_EQ(cb.max_truncated_mass(), max_mass);
  EXPECT_TRUE(cb.row(25).empty());
}

TEST(CodebookTest, SingleLeaf) {
  Job job;
  job.dissim = CondensedMatrix(1);
  job.tree = HctTree::FromMerges({}, {4}).value();
  job.vertex_count = 6;
  const Codebook cb = BuildOrFail(job, {});
  ASSERT_EQ(cb.row(4).size(), 1u);
  EXPECT_EQ(cb.row(4)[0].vertex, 4u);
  EXPECT_EQ(cb.row(4)[0].accept_q31, kQ31One);
  EXPECT_EQ(cb.truncated_mass(4), 0.0);
}

TEST(CodebookTest, ThreadCountDoesNotChangeTheResult) {
  const Job job = MakeJob(16, 150, 160);
  const Codebook one = BuildOrFail(job, {.k = 8, .threads = 1});
  EXPECT_EQ(BuildOrFail(job, {.k = 8, .threads = 2}), one);
  EXPECT_EQ(BuildOrFail(job, {.k = 8, .threads = 7}), one);
}

TEST(CodebookTest, ScoreScaleMultipliesTheScore) {
  const Job job = MakeJob(17, 30, 30);
  // 0.6 * 0.5 == 0.3 exactly in binary floating point.
  const Codebook scaled = BuildOrFail(job, {.epsilon = 0.6, .k = 8, .score_scale = 0.5});
  EXPECT_EQ(scaled, BuildOrFail(job, {.epsilon = 0.3, .k = 8}));
  EXPECT_FALSE(scaled == BuildOrFail(job, {.epsilon = 0.6, .k = 8}));
}

// Eq. 10 clipped to [-B, 0]: rows follow exp(eps * max(u, -B)), checked by
// sampling (chi-square) and exactly, and the reported sensitivity is B.
TEST(CodebookTest, ClippedScoresFollowTheClippedEquation12AndReportB) {
  constexpr double kEpsilon = 0.3;
  constexpr double kClip = 2.0;
  const Job job = MakeJob(21, 12, 20);
  // The clip must bite: count the scores below -B.
  int clipped = 0;
  for (uint32_t leaf = 0; leaf < 12; ++leaf) {
    for (double lw : LogWeights(job, leaf, 1.0)) clipped += lw < -kClip;
  }
  ASSERT_GT(clipped, 12 * 12 / 4);

  const Codebook cb = BuildOrFail(job, {.epsilon = kEpsilon, .k = 32, .score_clip = kClip});
  EXPECT_EQ(cb.max_truncated_mass(), 0.0);
  ExpectRowsMatchEquation12(job, cb, kEpsilon, 32, kClip);
  Drbg rng;
  test::Seed(rng, 271828);
  constexpr int kDraws = 200000;
  for (uint32_t leaf : {0u, 6u, 11u}) {
    const std::vector<double> observed = DrawCounts(job, cb, leaf, kDraws, rng);
    const auto expected_for = [&](double clip) {
      std::vector<double> e =
          nodefl::testing::NormalizedLogWeights(LogWeights(job, leaf, kEpsilon, /*with_lca=*/true, clip));
      for (double& x : e) x *= kDraws;
      return e;
    };
    const auto [stat, df] = PooledChiSquare(observed, expected_for(kClip));
    EXPECT_LT(stat, nodefl::testing::ChiSquareCritical(df)) << "leaf " << leaf;
    // Power: the same draws reject the unclipped score (a clip option that
    // is accepted but ignored) and a clip at a different bound.
    const auto [raw, raw_df] = PooledChiSquare(observed, expected_for(0));
    EXPECT_GT(raw, nodefl::testing::ChiSquareCritical(raw_df)) << "leaf " << leaf;
    const auto [other, other_df] = PooledChiSquare(observed, expected_for(1.5 * kClip));
    EXPECT_GT(other, nodefl::testing::ChiSquareCritical(other_df)) << "leaf " << leaf;
  }

  // Sensitivity: B with the clip, the largest raw |u| without; the raw
  // maximum is still measured (before clipping).
  const Codebook raw = BuildOrFail(job, {.epsilon = kEpsilon, .k = 32});
  double largest = 0;
  for (uint32_t leaf = 0; leaf < 12; ++leaf) {
    for (double lw : LogWeights(job, leaf, 1.0)) largest = std::max(largest, -lw);
  }
  EXPECT_NEAR(raw.max_abs_score(), largest, 1e-12 * largest);
  EXPECT_EQ(raw.score_sensitivity(), raw.max_abs_score());
  EXPECT_EQ(cb.score_sensitivity(), kClip);
  EXPECT_EQ(cb.max_abs_score(), raw.max_abs_score());
  // A bound above every score clips nothing, but B is still what was
  // declared and what the accounting uses.
  const Codebook loose = BuildOrFail(job, {.epsilon = kEpsilon, .k = 32, .score_clip = 2 * largest});
  EXPECT_EQ(loose, raw);
  EXPECT_EQ(loose.score_sensitivity(), 2 * largest);
}

TEST(CodebookTest, BuildRejectsBadInput) {
  const Job job = MakeJob(18, 8, 10);
  const auto builds = [&](const CondensedMatrix& d, uint32_t vertex_count, const CodebookOptions& o) {
    return Codebook::Build(d, job.tree, vertex_count, o).has_value();
  };
  EXPECT_TRUE(builds(job.dissim, 10, {}));
  EXPECT_FALSE(builds(CondensedMatrix(7), 10, {}));        // not one row per leaf
  uint32_t max_vertex = 0;
  for (uint32_t v : job.tree.leaf_vertices()) max_vertex = std::max(max_vertex, v);
  EXPECT_FALSE(builds(job.dissim, max_vertex, {}));        // a leaf's id out of range
  EXPECT_FALSE(builds(job.dissim, nodefl::fedwalk::kAbsentVertex, {}));
  for (float bad : {-0.5f, NAN, INFINITY}) {
    CondensedMatrix d = job.dissim;
    d.set(1, 6, bad);
    EXPECT_FALSE(builds(d, 10, {}));
  }
  EXPECT_FALSE(builds(job.dissim, 10, {.k = 0}));
  EXPECT_FALSE(builds(job.dissim, 10, {.k = nodefl::fedwalk::kMaxCodebookK + 1}));
  EXPECT_FALSE(builds(job.dissim, 10, {.epsilon = 0}));
  EXPECT_FALSE(builds(job.dissim, 10, {.epsilon = NAN}));
  EXPECT_FALSE(builds(job.dissim, 10, {.score_scale = -1}));
  EXPECT_FALSE(builds(job.dissim, 10, {.epsilon = 1e300, .score_scale = 1e300}));
  EXPECT_FALSE(builds(job.dissim, 10, {.score_clip = -1}));
  EXPECT_FALSE(builds(job.dissim, 10, {.score_clip = NAN}));
  EXPECT_FALSE(builds(job.dissim, 10, {.score_clip = INFINITY}));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
