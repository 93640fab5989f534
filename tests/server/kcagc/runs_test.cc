// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Whole kCAGC runs in one process on generated attributed graphs (planted
// communities whose members share feature columns):
//   - basic kCAGC's Lloyd phase, through fixed-point secure sums, gives
//     exactly the assignments (and centres) of centralized Lloyd on the
//     concatenated features from the same initial centres;
//   - kCAGC with the features split over L = 2 and 4 reaches >= 0.95
//     accuracy;
//   - the range rule clips nothing, in every mode and option, and every
//     value submitted is within the code's clip;
//   - the secure sums counted equal the formula in every mode; the tree for
//     L = 5 has 4 internal nodes and its count matches the formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/server/kcagc/metrics.h"
#include "nodefl/server/kcagc/secure_sums.h"
#include "nodefl/server/kcagc/sim/collaborative.h"
#include "nodefl/server/kcagc/sim/features.h"
#include "nodefl/server/kcagc/sim/runs.h"
#include "../kcagc_attributed_graph.h"
#include "sim_test_support.h"

namespace nodefl::server::kcagc {
namespace {

using nodefl::kcagc::Matrix;

dataset::Graph AttributedGraph(uint32_t blocks, uint32_t block_size, double p_in, double p_out, uint32_t columns,
                               double p_on, double p_off, uint64_t seed) {
  return kcagc_test::AttributedPlantedPartition(blocks, block_size, columns, seed, p_in, p_out, p_on, p_off);
}



TEST(KcagcRunsTest, BasicLloydPhaseEqualsCentralizedLloydExactly) {
  const dataset::Graph g = AttributedGraph(3, 60, 0.15, 0.01, 30, 0.35, 0.05, 7);
  const nodefl::kcagc::GraphView view = GraphViewOf(g);
  nodefl::kcagc::FilterOptions filter;
  filter.order = 3;
  std::vector<Matrix> slices = Slices(g, 3, 11);
  for (Matrix& s : slices) ASSERT_TRUE(nodefl::kcagc::ApplyGraphFilter(view, filter, &s).ok());
  // The centralized view: the participants' filtered columns side by side.
  Matrix whole(g.num_nodes, g.num_feature_dims);
  Eigen::Index at = 0;
  for (const Matrix& s : slices) {
    whole.middleCols(at, s.cols()) = s;
    at += s.cols();
  }
  // The fixed-point code from the range rule, through a secure sum.
  SimulatedSecureAggregator agg;
  const nodefl::secagg::FixedPoint range = nodefl::kcagc::RangeCode(3).value();
  std::vector<std::vector<float>> bounds;
  for (const Matrix& s : slices) bounds.push_back({nodefl::kcagc::RangeSubmission(nodefl::kcagc::DistanceBound(s), range).value()});
  const float clip = nodefl::kcagc::ClipFromRangeSum(agg.Sum(bounds, range).value()[0]);
  const nodefl::secagg::FixedPoint code = nodefl::kcagc::CodeForClip(clip, 3).value();

  // Two starts: three points of one block (a poor start that leaves Lloyd
  // much to do) and one point per block (which finds the blocks).
  for (const std::vector<uint32_t>& seeds : {std::vector<uint32_t>{0, 1, 2}, std::vector<uint32_t>{0, 60, 120}}) {
    Matrix central_centres(3, whole.cols());
    for (int r = 0; r < 3; ++r) central_centres.row(r) = whole.row(seeds[r]);
    std::vector<Matrix> centres;
    at = 0;
    for (const Matrix& s : slices) {
      centres.push_back(central_centres.middleCols(at, s.cols()));
      at += s.cols();
    }
    const Result<nodefl::kcagc::LloydResult> central = nodefl::kcagc::Lloyd(whole, {}, &central_centres, 10, nullptr);
    ASSERT_TRUE(central.ok());
    const AggregationCounters before = agg.counters();
    const Result<LloydOutcome> joint = CollaborativeLloyd(slices, {}, centres, nullptr, 10, code, &agg);
    ASSERT_TRUE(joint.ok());
    EXPECT_EQ(joint->assignment, central->assignment);
    EXPECT_EQ(joint->iterations, central->iterations);
    EXPECT_EQ(joint->converged, central->converged);
    EXPECT_GE(central->iterations, 2u);
    // Same assignments, same arithmetic per column: the same centres, bit for bit.
    at = 0;
    for (const Matrix& c : centres) {
      EXPECT_EQ(c, Matrix(central_centres.middleCols(at, c.cols())));
      at += c.cols();
    }
    const AggregationCounters cost = agg.counters() - before;
    EXPECT_EQ(cost.clipped, 0u);
    EXPECT_EQ(cost.scalars, uint64_t{joint->iterations} * g.num_nodes * 3);
    EXPECT_EQ(cost.rounds, joint->iterations);
    if (seeds[1] == 60) {
      EXPECT_GE(ScoreClustering(joint->assignment, Labels(g)).value().accuracy, 0.95);
    }
  }
}

RunOptions Options(Mode mode, uint32_t k) {
  RunOptions o;
  o.mode = mode;
  o.clusters = k;
  o.filter.order = 4;
  return o;
}

TEST(KcagcRunsTest, KcagcReachesHighAccuracyWithFeaturesSplitOverTwoAndFourParticipants) {
  const dataset::Graph g = AttributedGraph(4, 100, 0.08, 0.004, 48, 0.3, 0.05, 21);
  const std::vector<int32_t> labels = Labels(g);
  for (const uint32_t parties : {2u, 4u}) {
    for (const uint64_t seed : {1u, 2u, 3u}) {
      RunOptions o = Options(Mode::kKcagc, 4);
      o.seed = seed;
      CheckedAggregator agg;
      const Result<RunReport> r = RunSimulation(GraphViewOf(g), Slices(g, parties, seed), o, &agg);
      ASSERT_TRUE(r.ok()) << r.status().str();
      const double accuracy = ScoreClustering(r->assignment, labels).value().accuracy;
      EXPECT_GE(accuracy, 0.95) << "L " << parties << " seed " << seed;
      EXPECT_EQ(r->cost.clipped, 0u);
      EXPECT_EQ(r->cost.scalars, r->expected_secure_sums);
      EXPECT_LE(r->intersections, uint64_t{4} * (parties == 2 ? 4 : 64));
    }
  }
}

TEST(KcagcRunsTest, RangeRuleClipsNothingInAnyModeOrOption) {
  const dataset::Graph g = AttributedGraph(3, 50, 0.1, 0.01, 24, 0.4, 0.05, 5);
  for (const Mode mode : {Mode::kBasic, Mode::kKcagc, Mode::kTree}) {
    for (const Seeding seeding : {Seeding::kJoint, Seeding::kLocal}) {
      for (const auto space : {nodefl::kcagc::ClusterSpace::kFull, nodefl::kcagc::ClusterSpace::kProjected,
                               nodefl::kcagc::ClusterSpace::kWhitened}) {
        for (const auto kind : {nodefl::kcagc::VirtualNodeKind::kCentre, nodefl::kcagc::VirtualNodeKind::kIntersection}) {
          RunOptions o = Options(mode, 3);
          o.local_clusters = 6;
          o.seeding = seeding;
          o.space = space;
          o.virtual_nodes = kind;
          CheckedAggregator agg;
          const Result<RunReport> r = RunSimulation(GraphViewOf(g), Slices(g, 3, 1), o, &agg);
          ASSERT_TRUE(r.ok());
          EXPECT_EQ(r->cost.clipped, 0u);
          EXPECT_EQ(agg.over_clip, 0u);
          EXPECT_LE(agg.largest_share, 1.0);
          EXPECT_GT(agg.largest_share, 0.0);
          EXPECT_EQ(r->cost.scalars, r->expected_secure_sums) << ModeName(mode);
          // The working code: L clip scale < 2^31, and no larger power of two fits.
          EXPECT_LT(3.0 * r->clip * r->code.scale, 2147483648.0);
          EXPECT_GE(3.0 * r->clip * r->code.scale * 2, 2147483648.0 * 0.999);
        }
      }
    }
  }
}

TEST(KcagcRunsTest, SecureSumCountsMatchTheFormulaInEveryMode) {
  const dataset::Graph g = AttributedGraph(3, 60, 0.1, 0.01, 30, 0.35, 0.05, 9);
  const uint32_t n = g.num_nodes, k = 3, q = 10;
  {
    SimulatedSecureAggregator agg;
    const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, 3, 1), Options(Mode::kBasic, k), &agg).value();
    ASSERT_EQ(r.stages.size(), 1u);
    EXPECT_EQ(r.cost.scalars, 1u + (1u + r.stages[0].iterations) * uint64_t{n} * k);
    EXPECT_EQ(r.cost.rounds, 1u + k + r.stages[0].iterations);  // range, k seeds, Lloyd
    EXPECT_LE(r.cost.scalars, 1u + PaperBasicSecureSums(n, k, q));
    EXPECT_EQ(r.cost.uploaded_bytes, 4u * 3u * r.cost.scalars);
  }
  {
    SimulatedSecureAggregator agg;
    RunOptions o = Options(Mode::kKcagc, k);
    o.seeding = Seeding::kLocal;
    const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, 3, 1), o, &agg).value();
    EXPECT_EQ(r.cost.scalars, 1u + (1u + r.stages[0].iterations) * r.intersections * k);
    EXPECT_EQ(r.cost.rounds, 1u + 1u + r.stages[0].iterations);  // range, the 1/9 step, Lloyd
    EXPECT_LE(r.intersections, 27u);
  }
  {
    // Restarts of the collaborative stage each pay their own secure sums.
    SimulatedSecureAggregator agg;
    RunOptions o = Options(Mode::kKcagc, k);
    o.global_restarts = 3;
    const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, 3, 1), o, &agg).value();
    const StageReport& s = r.stages[0];
    EXPECT_EQ(s.restarts, 3u);
    EXPECT_GE(s.lloyd_iterations_total, 3u);
    EXPECT_EQ(r.cost.scalars, 1u + (3u + s.lloyd_iterations_total) * r.intersections * k);
    EXPECT_EQ(r.cost.rounds, 1u + StageRounds(k, s.lloyd_iterations_total, true, 3));
    EXPECT_EQ(r.expected_secure_sums, r.cost.scalars);
  }
  {
    CheckedAggregator agg;
    RunOptions o = Options(Mode::kCentral, k);
    const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, 3, 1), o, &agg).value();
    EXPECT_EQ(r.cost.scalars, 0u);
    EXPECT_EQ(agg.counters().rounds, 0u);
    EXPECT_GE(ScoreClustering(r.assignment, Labels(g)).value().accuracy, 0.95);
  }
}

TEST(KcagcRunsTest, TreeForFiveParticipants) {
  const dataset::Graph g = AttributedGraph(3, 60, 0.1, 0.01, 40, 0.35, 0.05, 13);
  const uint32_t k = 3, k_hat = 6, q = 10;
  RunOptions o = Options(Mode::kTree, k);
  o.local_clusters = k_hat;
  // Three runs per internal node (a single one merges two blocks for some
  // seeds: the tree compounds a poor seeding), each paying its secure sums.
  o.global_restarts = 3;
  SimulatedSecureAggregator agg;
  const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, 5, 2), o, &agg).value();
  EXPECT_EQ(r.internal_nodes, 4u);
  ASSERT_EQ(r.stages.size(), 4u);
  uint64_t formula = kRangeRoundSums, rounds = 1, participants = 0;
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageReport& s = r.stages[i];
    const bool root = i + 1 == r.stages.size();
    EXPECT_EQ(s.centres, root ? k : k_hat);
    EXPECT_EQ(root, s.depth == 0);
    EXPECT_LE(s.points, uint64_t{k_hat} * k_hat);  // two children of k̂ clusters each
    EXPECT_EQ(s.restarts, 3u);
    EXPECT_EQ(s.cost.scalars, (3u + s.lloyd_iterations_total) * s.points * s.centres);
    formula += (3u + s.lloyd_iterations_total) * s.points * s.centres;
    rounds += StageRounds(s.centres, s.lloyd_iterations_total, true, 3);
    participants += s.participants;
  }
  EXPECT_EQ(participants, 2u + 3u + 2u + 5u);  // {0,1}, {0,1,2}, {3,4}, all
  EXPECT_EQ(r.cost.scalars, formula);
  EXPECT_EQ(r.expected_secure_sums, formula);
  EXPECT_EQ(r.cost.rounds, rounds);
  EXPECT_LE(static_cast<double>(r.cost.scalars), 3 * TreeSecureSumBound(g.num_nodes, k, k_hat, 5, q));
  EXPECT_GE(ScoreClustering(r.assignment, Labels(g)).value().accuracy, 0.9);
}

TEST(KcagcRunsTest, RefusesBadOptions) {
  const dataset::Graph g = AttributedGraph(2, 10, 0.3, 0.05, 6, 0.5, 0.1, 3);
  SimulatedSecureAggregator agg;
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), Options(Mode::kKcagc, 0), &agg).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), Options(Mode::kKcagc, 21), &agg).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 1, 1), Options(Mode::kTree, 2), &agg).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), Options(Mode::kBasic, 2), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  RunOptions o = Options(Mode::kKcagc, 2);
  o.iterations = 0;
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), o, &agg).status().code(), StatusCode::kInvalidArgument);
  o = Options(Mode::kKcagc, 2);
  o.global_restarts = 0;
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), o, &agg).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(agg.counters().rounds, 0u);
}

TEST(KcagcRunsTest, ColumnSplitIsSeededNearEqualAndComplete) {
  const auto a = SplitColumns(10, 3, 1);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].size(), 4u);
  EXPECT_EQ(a[1].size(), 3u);
  EXPECT_EQ(a[2].size(), 3u);
  std::vector<uint32_t> all;
  for (const auto& c : a) all.insert(all.end(), c.begin(), c.end());
  std::sort(all.begin(), all.end());
  for (uint32_t j = 0; j < 10; ++j) EXPECT_EQ(all[j], j);
  EXPECT_EQ(SplitColumns(10, 3, 1), a);
  EXPECT_NE(SplitColumns(10, 3, 2), a);
}

}  // namespace
}  // namespace nodefl::server::kcagc
