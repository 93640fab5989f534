// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The joint mode (joint.h; not kCAGC's protocol) on generated attributed
// graphs:
//   - its U spans the subspace of the centralized run's whitened space of
//     the concatenated filtered slices (and of the SVD's), with exact sums
//     and through the fixed-point simulation of the secure service, for
//     L = 2, 3 and 5; the fixed-point run stays within rounding of the
//     exact-sum one; nothing is clipped and every submitted value is within
//     the clip;
//   - its clustering is the centralized run's, node for node up to the
//     names of the clusters, for L = 2 and 4;
//   - its secure sums, rounds and bytes are the formula's;
//   - on Cora (when the shared datasets are there) its accuracy is within
//     0.5 points of the centralized run's for L = 2 and 8.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/spectral.h"
#include "nodefl/server/kcagc/metrics.h"
#include "nodefl/server/kcagc/secure_sums.h"
#include "nodefl/server/kcagc/sim/features.h"
#include "nodefl/server/kcagc/sim/joint.h"
#include "nodefl/server/kcagc/sim/runs.h"
#include "reference_linalg.h"
#include "sim_test_support.h"
#include "../../sdk/kcagc_spectra.h"
#include "../kcagc_attributed_graph.h"

namespace nodefl::server::kcagc {
namespace {

using nodefl::kcagc::Matrix;

// Planted partition whose blocks share feature columns (p_on 0.3, p_off 0.05).
dataset::Graph Attributed(uint32_t blocks, uint32_t block_size, uint32_t columns, uint64_t seed) {
  return kcagc_test::AttributedPlantedPartition(blocks, block_size, columns, seed, 0.1, 0.01);
}

std::vector<Matrix> FilteredSlices(const dataset::Graph& g, uint32_t parties, uint64_t seed, uint32_t order) {
  nodefl::kcagc::FilterOptions filter;
  filter.order = order;
  std::vector<Matrix> out;
  for (const auto& c : SplitColumns(g.num_feature_dims, parties, seed)) {
    out.push_back(DenseSlice(g, c));
    EXPECT_TRUE(nodefl::kcagc::ApplyGraphFilter(GraphViewOf(g), filter, &out.back()).ok());
  }
  return out;
}

Matrix Concatenated(const std::vector<Matrix>& slices) {
  Eigen::Index columns = 0;
  for (const Matrix& s : slices) columns += s.cols();
  Matrix whole(slices.front().rows(), columns);
  Eigen::Index at = 0;
  for (const Matrix& s : slices) {
    whole.middleCols(at, s.cols()) = s;
    at += s.cols();
  }
  return whole;
}

using kcagc_test::LargestAngleSine;

// Sums in double with no code at all: the "exact" sums the fixed-point
// service approximates. Also checks every value against the code's clip.
class ExactAggregator final : public Aggregator {
 public:
  uint64_t over_clip = 0;

 protected:
  Result<std::vector<float>> Aggregate(std::span<const std::vector<float>> inputs,
                                       const nodefl::secagg::FixedPoint& code, uint64_t* clipped) override {
    std::vector<double> sum(inputs.front().size(), 0.0);
    for (const auto& v : inputs) {
      for (size_t i = 0; i < v.size(); ++i) {
        sum[i] += v[i];
        if (std::abs(v[i]) > code.clip) ++over_clip;
      }
    }
    *clipped = 0;
    return std::vector<float>(sum.begin(), sum.end());
  }
};


TEST(KcagcJointTest, SpansTheCentralWhitenedSpaceWithExactAndFixedPointSums) {
  const dataset::Graph g = Attributed(4, 80, 60, 3);
  const uint32_t k = 4, n = g.num_nodes;
  JointSpaceOptions o;
  o.dims = k;
  o.projection.seed = 41;
  for (const uint32_t parties : {2u, 3u, 5u}) {
    const std::vector<Matrix> slices = FilteredSlices(g, parties, parties, 4);
    const Matrix whole = Concatenated(slices);
    // The centralized run's space: the same iteration on the whole matrix
    // (same start block, same rule), and the SVD's for reference.
    const nodefl::kcagc::LeftSingularVectors central = nodefl::kcagc::TopLeftSingularVectors(whole, k, o.projection).value();
    const nodefl::test::ThinSvd svd = nodefl::test::ReferenceSvd(whole.cast<double>());
    const Matrix reference = svd.u.leftCols(k).cast<float>();
    ASSERT_LT(LargestAngleSine(central.basis, reference), 1e-4);

    ExactAggregator exact_agg;
    const Result<JointSpace> exact = JointSpectralSpace(slices, o, &exact_agg);
    ASSERT_TRUE(exact.ok()) << exact.status().str();
    CheckedAggregator fixed_agg;
    const Result<JointSpace> fixed = JointSpectralSpace(slices, o, &fixed_agg);
    ASSERT_TRUE(fixed.ok()) << fixed.status().str();

    for (const JointSpace* j : {&exact.value(), &fixed.value()}) {
      ASSERT_EQ(j->basis.rows(), static_cast<Eigen::Index>(n));
      ASSERT_EQ(j->basis.cols(), static_cast<Eigen::Index>(k));
      EXPECT_TRUE(j->converged);
      EXPECT_EQ(j->block, 14u);
      // The same iteration: rounding apart (about 1e-7 here), where another
      // start block or another rule would differ by the iteration's own
      // error against the SVD (4e-6 here).
      EXPECT_LT(LargestAngleSine(j->basis, central.basis), 1e-6) << "L " << parties;
      EXPECT_LT(LargestAngleSine(j->basis, reference), 1e-4) << "L " << parties;
      EXPECT_LE(std::abs(static_cast<int>(j->steps) - static_cast<int>(central.summary.steps)), 1) << "L " << parties;
      for (uint32_t r = 0; r < k; ++r) {
        EXPECT_NEAR(j->singular_values[r] / svd.singular_values(r), 1.0, 1e-5) << "L " << parties << " σ_" << r;
      }
      EXPECT_EQ(j->cost.clipped, 0u);
      EXPECT_EQ(j->range.bounds.size(), parties);
    }
    // Fixed point against exact sums: U moves by rounding only.
    EXPECT_LT(LargestAngleSine(fixed->basis, exact->basis), 1e-6) << "L " << parties;
    EXPECT_EQ(exact_agg.over_clip, 0u);
    EXPECT_EQ(fixed_agg.over_clip, 0u);
    EXPECT_LE(fixed_agg.largest_share, 1.0);
    EXPECT_GT(fixed_agg.largest_share, 0.0);
    // The working code: L clip scale < 2^31, and no larger power of two fits.
    EXPECT_LT(parties * double{fixed->range.clip} * fixed->range.code.scale, 2147483648.0);
    EXPECT_GE(parties * double{fixed->range.clip} * fixed->range.code.scale * 2, 2147483648.0 * 0.999);
  }
}

RunOptions Options(Mode mode, uint32_t k, uint64_t seed) {
  RunOptions o;
  o.mode = mode;
  o.clusters = k;
  o.filter.order = 4;
  o.seed = seed;
  return o;
}


TEST(KcagcJointTest, ClustersExactlyAsTheCentralRun) {
  const dataset::Graph g = Attributed(4, 90, 48, 8);
  const uint32_t k = 4;
  for (const uint32_t parties : {2u, 4u}) {
    for (const uint64_t seed : {1u, 2u}) {
      // The central run through the same iteration (below 512 nodes kAuto
      // would take the exact route: that is checked against the SVD above).
      RunOptions central = Options(Mode::kCentral, k, seed);
      central.projection_method = nodefl::kcagc::ProjectionMethod::kSubspace;
      const Result<RunReport> c = RunSimulation(GraphViewOf(g), Slices(g, 1, seed), central, nullptr);
      ASSERT_TRUE(c.ok()) << c.status().str();
      EXPECT_GT(c->spectral_steps, 0u);
      CheckedAggregator agg;
      const Result<RunReport> j = RunSimulation(GraphViewOf(g), Slices(g, parties, seed), Options(Mode::kJoint, k, seed), &agg);
      ASSERT_TRUE(j.ok()) << j.status().str();
      // Node for node the same partition: the joint clustering scored
      // against the central one as labels (Hungarian matching) is perfect.
      EXPECT_EQ(ScoreClustering(j->assignment, c->assignment).value().accuracy, 1.0) << "L " << parties << " seed " << seed;
      EXPECT_GE(ScoreClustering(j->assignment, Labels(g)).value().accuracy, 0.95);
      EXPECT_LE(std::abs(static_cast<int>(j->spectral_steps) - static_cast<int>(c->spectral_steps)), 1);
      // The same start block and rule as the central run: the same U up to
      // rounding (another start would leave it about 5e-6 away).
      ASSERT_EQ(j->embedding.cols(), static_cast<Eigen::Index>(k));
      EXPECT_LT(LargestAngleSine(j->embedding, c->embedding), 1e-6) << "L " << parties << " seed " << seed;
      EXPECT_EQ(j->cost.clipped, 0u);
      EXPECT_EQ(agg.over_clip, 0u);
      EXPECT_EQ(j->participants, parties);
      EXPECT_EQ(j->singular_values.size(), k);
      // The exact route of the central run (kAuto, 360 nodes) agrees as well.
      const Result<RunReport> e = RunSimulation(GraphViewOf(g), Slices(g, 1, seed), Options(Mode::kCentral, k, seed), nullptr);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->spectral_steps, 0u);
      EXPECT_EQ(ScoreClustering(j->assignment, e->assignment).value().accuracy, 1.0) << "L " << parties << " seed " << seed;
    }
  }
}

TEST(KcagcJointTest, SecureSumsRoundsAndBytesFollowTheFormula) {
  const dataset::Graph g = Attributed(3, 70, 40, 4);
  const uint32_t k = 3, n = g.num_nodes;
  for (const uint32_t parties : {2u, 3u}) {
    SimulatedSecureAggregator agg;
    const RunReport r = RunSimulation(GraphViewOf(g), Slices(g, parties, 1), Options(Mode::kJoint, k, 1), &agg).value();
    const uint32_t b = k + 10;
    EXPECT_EQ(r.spectral_block, b);
    EXPECT_GT(r.spectral_steps, 1u);
    EXPECT_TRUE(r.spectral_converged);
    EXPECT_EQ(r.cost.scalars, 1u + uint64_t{r.spectral_steps} * n * b);
    EXPECT_EQ(r.cost.scalars, JointSecureSums(n, b, r.spectral_steps));
    EXPECT_EQ(r.expected_secure_sums, r.cost.scalars);
    EXPECT_EQ(r.cost.rounds, JointRounds(r.spectral_steps));
    EXPECT_EQ(r.cost.rounds, 1u + r.spectral_steps);
    EXPECT_EQ(r.cost.uploaded_bytes, 4u * parties * r.cost.scalars);
    EXPECT_EQ(r.cost.clipped, 0u);
    EXPECT_EQ(r.paper_secure_sums, 0.0);  // the paper has no such mode
    EXPECT_EQ(r.bounds.size(), parties);
    EXPECT_EQ(agg.counters().scalars, r.cost.scalars);
  }
}

TEST(KcagcJointTest, RefusesSpacesOtherThanWhitened) {
  const dataset::Graph g = Attributed(2, 20, 10, 5);
  SimulatedSecureAggregator agg;
  for (const auto space : {nodefl::kcagc::ClusterSpace::kFull, nodefl::kcagc::ClusterSpace::kProjected}) {
    RunOptions o = Options(Mode::kJoint, 2, 1);
    o.space = space;
    EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), o, &agg).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(RunSimulation(GraphViewOf(g), Slices(g, 2, 1), Options(Mode::kJoint, 2, 1), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(agg.counters().rounds, 0u);
  EXPECT_STREQ(ModeName(Mode::kJoint), "joint");
}

// Cora (2,708 nodes, 1,433 features, 7 classes) with the defaults: the
// joint run's accuracy is the central run's within 0.5 points.
TEST(KcagcJointTest, CoraMatchesTheCentralRun) {
  const std::filesystem::path dir = std::filesystem::path(NODEFL_DATASETS_DIR) / "cora";
  if (!std::filesystem::exists(dir / "features.tsv")) GTEST_SKIP() << "no Cora at " << dir;
  const dataset::LoadResult loaded = dataset::LoadGraph(dir.string());
  ASSERT_TRUE(loaded.ok) << loaded.error;
  const dataset::Graph& g = loaded.graph;
  const std::vector<int32_t> labels = Labels(g);
  RunOptions central;
  central.mode = Mode::kCentral;
  central.clusters = g.num_label_classes;
  central.seed = 1;
  std::vector<uint32_t> all(g.num_feature_dims);
  for (uint32_t j = 0; j < g.num_feature_dims; ++j) all[j] = j;
  std::vector<Matrix> whole;
  whole.push_back(DenseSlice(g, all));
  const Result<RunReport> c = RunSimulation(GraphViewOf(g), std::move(whole), central, nullptr);
  ASSERT_TRUE(c.ok());
  const double central_accuracy = ScoreClustering(c->assignment, labels).value().accuracy;
  EXPECT_GT(central_accuracy, 0.68);
  for (const uint32_t parties : {2u, 8u}) {
    RunOptions joint = central;
    joint.mode = Mode::kJoint;
    SimulatedSecureAggregator agg;
    const Result<RunReport> j = RunSimulation(GraphViewOf(g), Slices(g, parties, 1), joint, &agg);
    ASSERT_TRUE(j.ok()) << j.status().str();
    const double accuracy = ScoreClustering(j->assignment, labels).value().accuracy;
    EXPECT_NEAR(accuracy, central_accuracy, 0.005) << "L " << parties;
    EXPECT_EQ(j->cost.clipped, 0u);
    EXPECT_EQ(j->cost.scalars, j->expected_secure_sums);
    EXPECT_TRUE(j->spectral_converged);
  }
}

}  // namespace
}  // namespace nodefl::server::kcagc
