// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kcagc job's pieces without the network:
//   - the coordinator (server/jobs kcagc_coordinator.h) with in-process
//     participants (sdk/kcagc role's ParticipantEngine, sums through the
//     simulated secure aggregator) gives the one-process run's clustering
//     and secure-sum counts bit for bit (server/kcagc/sim RunSimulation), in
//     every mode (the joint mode too: the same iteration, bit for bit),
//     both seedings, both kinds of virtual nodes, with restarts;
//   - a participant that multiplies the wrong block shows in that
//     comparison, and the engine refuses blocks out of order or too long;
//   - a participant's failure ends the run with that error;
//   - the emulator's column split is the simulation's;
//   - the contract's records round-trip and refuse what is out of range;
//   - the labels reader and the channel's close.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "kcagc_attributed_graph.h"
#include "nodefl/kcagc/participant_data.h"
#include "nodefl/kcagc/participant_engine.h"
#include "nodefl/protocol/kcagc/job_format.h"
#include "nodefl/server/jobs/kcagc_channel.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/server/jobs/kcagc_coordinator.h"
#include "nodefl/server/jobs/kcagc_job.h"
#include "nodefl/server/jobs/kcagc_kind.h"
#include "nodefl/server/jobs/kcagc_labels.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/sim/features.h"
#include "nodefl/server/kcagc/sim/runs.h"

namespace nodefl::server::jobs {
namespace {

namespace kc = nodefl::server::kcagc;
namespace kw = nodefl::kcagc;
using kw::Assignment;
using kw::Matrix;

// The participants in this process: each one's engine, and the sums
// through the simulation's aggregator (the fixed-point code, as the
// secure service sums).
class LocalParticipants final : public KcagcParticipants {
 public:
  LocalParticipants(const dataset::Graph& g, std::vector<Matrix> raw, const kw::EngineSettings& settings)
      : graph_(kc::GraphViewOf(g)) {
    for (uint32_t l = 0; l < raw.size(); ++l) {
      engines_.push_back(std::make_unique<kw::ParticipantEngine>(graph_, std::move(raw[l]), l));
      EXPECT_TRUE(engines_.back()->Prepare(settings).ok());
    }
  }

  uint32_t count() const override { return static_cast<uint32_t>(engines_.size()); }
  uint32_t nodes() const override { return graph_.num_nodes; }
  uint64_t columns() const override {
    uint64_t m = 0;
    for (const auto& e : engines_) m += e->columns();
    return m;
  }

  Result<std::vector<float>> SumRangeBounds(const nodefl::secagg::FixedPoint& code) override {
    std::vector<std::vector<float>> inputs;
    for (auto& e : engines_) {
      NODEFL_TRY_ASSIGN(const float b, e->RangeBound(code));
      inputs.push_back({b});
    }
    return aggregator_.Sum(inputs, code);
  }
  Result<std::vector<Assignment>> LocalClusters(uint32_t) override {
    std::vector<Assignment> out;
    for (auto& e : engines_) {
      NODEFL_TRY_ASSIGN(Assignment a, e->LocalClusters());
      out.push_back(std::move(a));
    }
    return out;
  }
  Status BeginStage(const KcagcStageSetup& s) override {
    first_ = s.first;
    members_ = s.count;
    for (uint32_t i = 0; i < s.count; ++i) {
      kw::EngineStage stage;
      stage.virtual_nodes = s.groups != nullptr;
      stage.tree_node = s.tree_node;
      stage.position = i;
      stage.groups = s.groups;
      if (s.groups != nullptr) {
        stage.part = s.parts[i];
        stage.child = s.children[i];
      }
      NODEFL_TRY(engines_[s.first + i]->BeginStage(stage));
    }
    return Status::Ok();
  }
  Result<std::vector<float>> SumSeedDistances(uint32_t seed, const nodefl::secagg::FixedPoint& code) override {
    return SumOver([&](kw::ParticipantEngine& e) { return e.SeedDistances(seed); }, code);
  }
  Status SeedCentres(std::span<const uint32_t> seeds) override {
    return Each([&](kw::ParticipantEngine& e) { return e.CentresFromSeeds(Span<const uint32_t>(seeds.data(), seeds.size())); });
  }
  Result<std::vector<float>> SumLocalSeedDistances(uint32_t c, uint64_t stream, const nodefl::secagg::FixedPoint& code) override {
    return SumOver([&](kw::ParticipantEngine& e) { return e.LocalSeeding(c, stream); }, code);
  }
  Status UpdateCentres(const Assignment& a) override {
    return Each([&](kw::ParticipantEngine& e) { return e.UpdateCentres(a); });
  }
  Result<std::vector<float>> SumDistances(uint32_t c, const nodefl::secagg::FixedPoint& code) override {
    if (fail_distances_) return Status::Unavailable();
    return SumOver([&](kw::ParticipantEngine& e) { return e.Distances(c); }, code);
  }
  Status EndStage(uint32_t kept) override {
    return Each([&](kw::ParticipantEngine& e) { return e.EndStage(kept); });
  }
  Result<std::vector<float>> SumSpectralStep(uint32_t step, const Matrix& block,
                                             const nodefl::secagg::FixedPoint& code) override {
    if (step == 0) first_block_ = block;
    std::vector<std::vector<float>> inputs;
    for (uint32_t l = 0; l < engines_.size(); ++l) {
      // The fault: this participant multiplies Q_0 at every step, as one
      // that kept its own start block instead of the server's would.
      const Matrix& q = static_cast<int32_t>(l) == stale_block_ ? first_block_ : block;
      NODEFL_TRY(engines_[l]->TakeSpectralBlock(step, q));
      NODEFL_TRY_ASSIGN(std::vector<float> z, engines_[l]->SpectralProduct(step));
      inputs.push_back(std::move(z));
    }
    return aggregator_.Sum(inputs, code);
  }
  Status Finish(const Assignment& a) override {
    finished_ = a;
    return Status::Ok();
  }

  const kc::AggregationCounters& counters() const { return aggregator_.counters(); }
  const Assignment& finished() const { return finished_; }
  bool fail_distances_ = false;
  int32_t stale_block_ = -1;  // a participant that multiplies the wrong block (-1: none)

 private:
  template <typename F>
  Result<std::vector<float>> SumOver(F f, const nodefl::secagg::FixedPoint& code) {
    std::vector<std::vector<float>> inputs;
    for (uint32_t i = 0; i < members_; ++i) {
      NODEFL_TRY_ASSIGN(std::vector<float> v, f(*engines_[first_ + i]));
      inputs.push_back(std::move(v));
    }
    return aggregator_.Sum(inputs, code);
  }
  template <typename F>
  Status Each(F f) {
    for (uint32_t i = 0; i < members_; ++i) NODEFL_TRY(f(*engines_[first_ + i]));
    return Status::Ok();
  }

  kw::GraphView graph_;
  std::vector<std::unique_ptr<kw::ParticipantEngine>> engines_;
  kc::SimulatedSecureAggregator aggregator_;
  uint32_t first_ = 0, members_ = 0;
  Assignment finished_;
  Matrix first_block_;
};

struct Case {
  KcagcRunMode mode;
  uint32_t participants;
  KcagcSeedingRule seeding = KcagcSeedingRule::kJoint;
  kw::VirtualNodeKind virtual_nodes = kw::VirtualNodeKind::kIntersection;
  uint32_t global_restarts = 1;
  uint32_t local_factor = 1;  // k̂ = factor k
  uint32_t space_dims = 0;    // 0: k
};

// The same settings for the simulation, the participants' engines and the
// coordinator.
struct Settings {
  kc::RunOptions sim;
  kw::EngineSettings engine;
  KcagcRunSettings run;
};

Settings SettingsFor(const Case& c, uint64_t seed) {
  Settings out;
  kc::RunOptions& sim = out.sim;
  sim.mode = c.mode == KcagcRunMode::kBasic   ? kc::Mode::kBasic
             : c.mode == KcagcRunMode::kTree  ? kc::Mode::kTree
             : c.mode == KcagcRunMode::kJoint ? kc::Mode::kJoint
                                              : kc::Mode::kKcagc;
  sim.clusters = 4;
  sim.local_clusters = 4 * c.local_factor;
  sim.space_dims = c.space_dims;
  sim.seeding = c.seeding == KcagcSeedingRule::kLocal ? kc::Seeding::kLocal : kc::Seeding::kJoint;
  sim.virtual_nodes = c.virtual_nodes;
  sim.global_restarts = c.global_restarts;
  sim.local_restarts = 3;
  sim.seed = seed;
  const bool no_local = c.mode == KcagcRunMode::kBasic || c.mode == KcagcRunMode::kJoint;
  kw::EngineSettings& es = out.engine;
  es.clusters = sim.clusters;
  es.local_clusters = no_local ? sim.clusters : sim.local_clusters;
  es.filter = sim.filter;
  es.space = sim.space;
  es.space_dims = sim.space_dims;
  es.virtual_nodes = sim.virtual_nodes;
  es.iterations = sim.iterations;
  es.local_restarts = sim.local_restarts;
  es.seed = seed;
  es.joint = c.mode == KcagcRunMode::kJoint;
  KcagcRunSettings& s = out.run;
  s.mode = c.mode;
  s.clusters = sim.clusters;
  s.local_clusters = es.local_clusters;
  s.seeding = c.seeding;
  s.iterations = sim.iterations;
  s.global_restarts = c.global_restarts;
  s.seed = seed;
  s.space_dims = sim.space_dims;
  s.local_restarts = sim.local_restarts;
  return out;
}

std::vector<Matrix> RawSlices(const dataset::Graph& g, uint32_t participants, uint64_t seed) {
  std::vector<Matrix> raw;
  for (const auto& cols : kc::SplitColumns(g.num_feature_dims, participants, seed)) raw.push_back(kc::DenseSlice(g, cols));
  return raw;
}

class CoordinatorMatchesSimulation : public ::testing::TestWithParam<Case> {};

TEST_P(CoordinatorMatchesSimulation, SameClusteringAndSecureSums) {
  const Case c = GetParam();
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(4, 40, 48, 11);
  const uint64_t seed = 5;
  const std::vector<Matrix> raw = RawSlices(g, c.participants, seed);
  const Settings settings = SettingsFor(c, seed);
  kc::SimulatedSecureAggregator aggregator;
  const Result<kc::RunReport> expected = kc::RunSimulation(kc::GraphViewOf(g), raw, settings.sim, &aggregator);
  ASSERT_TRUE(expected.ok()) << expected.status().str();

  LocalParticipants participants(g, raw, settings.engine);
  const Result<KcagcRunSummary> got = RunKcagcCoordinator(settings.run, participants);
  ASSERT_TRUE(got.ok()) << got.status().str();

  EXPECT_EQ(got->assignment, expected->assignment);
  EXPECT_EQ(participants.finished(), expected->assignment);
  EXPECT_EQ(got->cost.rounds, expected->cost.rounds);
  EXPECT_EQ(got->cost.scalars, expected->cost.scalars);
  EXPECT_EQ(got->cost.uploaded_bytes, expected->cost.uploaded_bytes);
  EXPECT_EQ(got->cost.scalars, participants.counters().scalars);
  EXPECT_EQ(got->expected_secure_sums, expected->expected_secure_sums);
  EXPECT_EQ(got->cost.scalars, got->expected_secure_sums);
  EXPECT_EQ(got->intersections, expected->intersections);
  EXPECT_EQ(got->stages.size(), expected->stages.size());
  EXPECT_EQ(got->clip, expected->clip);
  EXPECT_DOUBLE_EQ(got->paper_secure_sums, expected->paper_secure_sums);
  // The joint mode's iteration: the same steps and the same singular
  // values, bit for bit (so every sum of every step was the same); none
  // in the other modes.
  EXPECT_EQ(got->spectral_steps, expected->spectral_steps);
  EXPECT_EQ(got->spectral_block, expected->spectral_block);
  EXPECT_EQ(got->spectral_converged, expected->spectral_converged);
  EXPECT_EQ(got->singular_values, expected->singular_values);
  if (c.mode == KcagcRunMode::kJoint) {
    EXPECT_TRUE(got->spectral_converged);
    EXPECT_GT(got->spectral_steps, 1u);
    EXPECT_EQ(got->local_iterations, expected->local_iterations_max);
    EXPECT_EQ(got->local_unassigned_after_one_ninth, expected->local_unassigned_max);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CoordinatorMatchesSimulation,
    ::testing::Values(Case{KcagcRunMode::kBasic, 2}, Case{KcagcRunMode::kBasic, 3, KcagcSeedingRule::kLocal},
                      Case{KcagcRunMode::kKcagc, 2}, Case{KcagcRunMode::kKcagc, 4},
                      Case{KcagcRunMode::kKcagc, 3, KcagcSeedingRule::kLocal, kw::VirtualNodeKind::kCentre},
                      Case{KcagcRunMode::kKcagc, 2, KcagcSeedingRule::kJoint, kw::VirtualNodeKind::kIntersection, 3, 2},
                      Case{KcagcRunMode::kKcagc, 3, KcagcSeedingRule::kJoint, kw::VirtualNodeKind::kIntersection, 1, 2, 6},
                      Case{KcagcRunMode::kTree, 5}, Case{KcagcRunMode::kTree, 4, KcagcSeedingRule::kLocal,
                                                         kw::VirtualNodeKind::kCentre, 2},
                      Case{KcagcRunMode::kJoint, 2}, Case{KcagcRunMode::kJoint, 4},
                      Case{KcagcRunMode::kJoint, 3, KcagcSeedingRule::kJoint, kw::VirtualNodeKind::kIntersection, 1, 1,
                           6}),
    [](const ::testing::TestParamInfo<Case>& p) {
      const Case& c = p.param;
      if (c.mode == KcagcRunMode::kJoint) {  // no seeding, virtual nodes, restarts or k̂
        return "joint_L" + std::to_string(c.participants) + "_d" + std::to_string(c.space_dims);
      }
      return std::string(KcagcRunModeName(c.mode)) + "_L" + std::to_string(c.participants) +
             (c.seeding == KcagcSeedingRule::kLocal ? "_local" : "_joint") +
             (c.virtual_nodes == kw::VirtualNodeKind::kCentre ? "_centre" : "") + "_r" +
             std::to_string(c.global_restarts) + "_k" + std::to_string(c.local_factor) + "_d" +
             std::to_string(c.space_dims);
    });

TEST(KcagcCoordinator, AParticipantThatMultipliesTheWrongBlockShows) {
  // What the comparison above catches: participant 1 multiplies Q_0 at
  // every step instead of the server's Q_t. The run still ends (at the
  // step cap, or on another subspace), but not with the simulation's
  // singular values.
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(4, 40, 48, 11);
  const Case c{KcagcRunMode::kJoint, 2};
  const std::vector<Matrix> raw = RawSlices(g, c.participants, 5);
  const Settings settings = SettingsFor(c, 5);
  kc::SimulatedSecureAggregator aggregator;
  const Result<kc::RunReport> expected = kc::RunSimulation(kc::GraphViewOf(g), raw, settings.sim, &aggregator);
  ASSERT_TRUE(expected.ok()) << expected.status().str();
  LocalParticipants participants(g, raw, settings.engine);
  participants.stale_block_ = 1;
  const Result<KcagcRunSummary> got = RunKcagcCoordinator(settings.run, participants);
  ASSERT_TRUE(got.ok()) << got.status().str();
  EXPECT_NE(got->singular_values, expected->singular_values);
}

TEST(KcagcParticipantEngine, TheJointModeTakesBlocksInOrderAndOfUnitColumns) {
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(3, 20, 24, 3);
  const std::vector<Matrix> raw = RawSlices(g, 2, 1);
  const kw::GraphView graph = kc::GraphViewOf(g);
  kw::EngineSettings es;
  es.clusters = es.local_clusters = 3;
  es.joint = true;
  kw::ParticipantEngine engine(graph, raw[0], 0);
  ASSERT_TRUE(engine.Prepare(es).ok());
  // b = k + 10 at most; Q = the first columns of the identity.
  const uint32_t b = kw::MaxSpectralBlock(g.num_nodes, es);
  EXPECT_EQ(b, 13u);
  const Matrix q = Matrix::Identity(g.num_nodes, b);
  EXPECT_EQ(engine.SpectralProduct(0).status().code(), StatusCode::kFailedPrecondition);  // no block yet
  EXPECT_EQ(engine.TakeSpectralBlock(1, q).code(), StatusCode::kFailedPrecondition);      // step 0 first
  Matrix longer = q;
  longer(0, 0) = 1.01f;  // a column longer than 1: past what G_l bounds
  EXPECT_EQ(engine.TakeSpectralBlock(0, longer).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.TakeSpectralBlock(0, Matrix::Identity(g.num_nodes, b + 1)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(engine.TakeSpectralBlock(0, q).ok());
  const Result<std::vector<float>> z = engine.SpectralProduct(0);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->size(), size_t{g.num_nodes} * b);
  EXPECT_EQ(engine.SpectralProduct(1).status().code(), StatusCode::kInvalidArgument);  // not the block taken
  ASSERT_TRUE(engine.TakeSpectralBlock(1, q).ok());
  EXPECT_EQ(engine.SpectralProduct(0).status().code(), StatusCode::kInvalidArgument);  // an older block
  EXPECT_EQ(engine.spectral_steps(), 2u);
  // The joint mode has no local clusters and no stages.
  EXPECT_EQ(engine.LocalClusters().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine.BeginStage(kw::EngineStage{}).code(), StatusCode::kFailedPrecondition);
}

TEST(KcagcCoordinator, AParticipantsErrorEndsTheRun) {
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(3, 20, 24, 3);
  std::vector<Matrix> raw;
  for (const auto& cols : kc::SplitColumns(g.num_feature_dims, 2, 1)) raw.push_back(kc::DenseSlice(g, cols));
  kw::EngineSettings es;
  es.clusters = es.local_clusters = 3;
  LocalParticipants participants(g, raw, es);
  participants.fail_distances_ = true;
  KcagcRunSettings s;
  s.clusters = s.local_clusters = 3;
  const Result<KcagcRunSummary> got = RunKcagcCoordinator(s, participants);
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(participants.finished().empty());
}

TEST(KcagcCoordinator, RefusesSettingsThatDoNotFit) {
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(3, 20, 24, 3);
  std::vector<Matrix> raw;
  for (const auto& cols : kc::SplitColumns(g.num_feature_dims, 2, 1)) raw.push_back(kc::DenseSlice(g, cols));
  kw::EngineSettings es;
  es.clusters = es.local_clusters = 3;
  LocalParticipants participants(g, raw, es);
  KcagcRunSettings s;
  s.clusters = 61;  // more clusters than nodes
  s.local_clusters = 3;
  EXPECT_EQ(RunKcagcCoordinator(s, participants).status().code(), StatusCode::kInvalidArgument);
  s.clusters = 3;
  s.iterations = 0;
  EXPECT_EQ(RunKcagcCoordinator(s, participants).status().code(), StatusCode::kInvalidArgument);
}

TEST(KcagcParticipantData, SplitIsTheSimulations) {
  for (const auto& [columns, parties, seed] :
       std::vector<std::tuple<uint32_t, uint32_t, uint64_t>>{{1433, 2, 1}, {1433, 16, 1}, {1433, 7, 99}, {10, 10, 3},
                                                             {5, 8, 2}}) {
    EXPECT_EQ(kw::SplitFeatureColumns(columns, parties, seed), kc::SplitColumns(columns, parties, seed))
        << columns << " " << parties << " " << seed;
  }
}

TEST(KcagcParticipantData, SliceIsTheSimulations) {
  const dataset::Graph g = kcagc_test::AttributedPlantedPartition(3, 20, 24, 3);
  const auto chunks = kw::SplitFeatureColumns(g.num_feature_dims, 3, 4);
  for (uint32_t l = 0; l < 3; ++l) {
    const Result<kw::ParticipantData> d = kw::MakeParticipantData(
        g.num_nodes, Span<const uint64_t>(g.offsets.data(), g.offsets.size()),
        Span<const uint32_t>(g.neighbours.data(), g.neighbours.size()),
        Span<const uint64_t>(g.feature_offsets.data(), g.feature_offsets.size()),
        Span<const uint32_t>(g.features.data(), g.features.size()), chunks[l], l, 3);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->slice == kc::DenseSlice(g, chunks[l]));
    EXPECT_EQ(d->graph().num_nodes, g.num_nodes);
  }
  EXPECT_FALSE(kw::MakeParticipantData(g.num_nodes, Span<const uint64_t>(g.offsets.data(), g.offsets.size()),
                                       Span<const uint32_t>(g.neighbours.data(), g.neighbours.size()),
                                       Span<const uint64_t>(g.feature_offsets.data(), g.feature_offsets.size()),
                                       Span<const uint32_t>(g.features.data(), g.features.size()), chunks[0], 3, 3)
                   .ok());
}

TEST(KcagcJobFormat, ParametersRoundTripAndRefuseOutOfRange) {
  kw::KcagcParameters p;
  p.salt[3] = 7;
  p.mode = kw::KcagcMode::kTree;
  p.clusters = 7;
  p.local_clusters = 14;
  p.filter = kw::KcagcFilter::kNorm;
  p.filter_order = 5;
  p.self_loops = false;
  p.space = kw::KcagcSpace::kProjected;
  p.seeding = kw::KcagcSeeding::kLocal;
  p.virtual_nodes = kw::KcagcVirtual::kCentre;
  p.iterations = 9;
  p.local_restarts = 4;
  p.seed = 0x0102030405060708ull;
  p.participants = 16;
  p.aggregation = nodefl::secagg::AggMode::kPaper;
  uint8_t bytes[kw::kKcagcParametersBytes];
  kw::EncodeKcagcParameters(p, bytes);
  const Result<kw::KcagcParameters> q = kw::DecodeKcagcParameters(ConstByteSpan(bytes));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->salt[3], 7);
  EXPECT_EQ(q->mode, kw::KcagcMode::kTree);
  EXPECT_EQ(q->local_clusters, 14u);
  EXPECT_EQ(q->filter, kw::KcagcFilter::kNorm);
  EXPECT_FALSE(q->self_loops);
  EXPECT_EQ(q->space, kw::KcagcSpace::kProjected);
  EXPECT_EQ(q->seeding, kw::KcagcSeeding::kLocal);
  EXPECT_EQ(q->virtual_nodes, kw::KcagcVirtual::kCentre);
  EXPECT_EQ(q->seed, p.seed);
  EXPECT_EQ(q->participants, 16u);
  EXPECT_EQ(q->aggregation, nodefl::secagg::AggMode::kPaper);
  p.participants = 1;  // a secure sum needs two
  kw::EncodeKcagcParameters(p, bytes);
  EXPECT_FALSE(kw::DecodeKcagcParameters(ConstByteSpan(bytes)).ok());
  EXPECT_FALSE(kw::DecodeKcagcParameters(ConstByteSpan(bytes, sizeof bytes - 1)).ok());
  // The joint mode, in the whitened space only; no mode past it.
  p.participants = 2;
  p.mode = kw::KcagcMode::kJoint;
  kw::EncodeKcagcParameters(p, bytes);
  EXPECT_FALSE(kw::DecodeKcagcParameters(ConstByteSpan(bytes)).ok());  // kProjected
  p.space = kw::KcagcSpace::kWhitened;
  kw::EncodeKcagcParameters(p, bytes);
  const Result<kw::KcagcParameters> joint = kw::DecodeKcagcParameters(ConstByteSpan(bytes));
  ASSERT_TRUE(joint.ok());
  EXPECT_EQ(joint->mode, kw::KcagcMode::kJoint);
  bytes[kw::kKcagcSaltBytes] = 5;
  EXPECT_FALSE(kw::DecodeKcagcParameters(ConstByteSpan(bytes)).ok());
}

TEST(KcagcJobFormat, SpectralStepsAndBlocksAreBounded) {
  uint8_t bytes[kw::kKcagcSpectralStepBytes];
  kw::EncodeKcagcSpectralStep(kw::KcagcSpectralStep{14, 2708, 17}, bytes);
  const Result<kw::KcagcSpectralStep> s = kw::DecodeKcagcSpectralStep(ConstByteSpan(bytes));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->step, 14u);
  EXPECT_EQ(s->rows, 2708u);
  EXPECT_EQ(s->columns, 17u);
  for (const kw::KcagcSpectralStep bad : {kw::KcagcSpectralStep{0, 0, 1}, kw::KcagcSpectralStep{0, 5, 0},
                                          kw::KcagcSpectralStep{0, 5, 6},  // more columns than rows
                                          kw::KcagcSpectralStep{0, 1u << 20, 17}}) {  // longer than an aggregation
    kw::EncodeKcagcSpectralStep(bad, bytes);
    EXPECT_FALSE(kw::DecodeKcagcSpectralStep(ConstByteSpan(bytes)).ok()) << bad.rows << " x " << bad.columns;
  }
  EXPECT_FALSE(kw::DecodeKcagcSpectralStep(ConstByteSpan(bytes, sizeof bytes - 1)).ok());
  // The block goes as array runs like any other, and the product is a contribution.
  const std::vector<uint32_t> values(10, 0x3f800000u);  // 1.0f
  std::vector<uint8_t> record(kw::kKcagcRecordBytes);
  const Result<size_t> n = kw::EncodeKcagcArrayRun(kw::KcagcArray::kBlock, 46036, 0, Span<const uint32_t>(values.data(), values.size()),
                                                   ByteSpan(record.data(), record.size()));
  ASSERT_TRUE(n.ok());
  const Result<kw::KcagcArrayRun> run = kw::DecodeKcagcArrayRun(ConstByteSpan(record.data(), *n));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->array, kw::KcagcArray::kBlock);
  kw::KcagcContribute c{kw::KcagcContribution::kSpectralProduct, 3, 1.0f, 1024.0f, 14, 0};
  uint8_t cb[kw::kKcagcContributeBytes];
  kw::EncodeKcagcContribute(c, cb);
  const Result<kw::KcagcContribute> c2 = kw::DecodeKcagcContribute(ConstByteSpan(cb));
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->what, kw::KcagcContribution::kSpectralProduct);
  EXPECT_EQ(c2->argument, 14u);
}

TEST(KcagcJobFormat, ArrayRunsAreBounded) {
  std::vector<uint32_t> values(kw::kKcagcValuesPerRecord + 1, 3);
  std::vector<uint8_t> record(kw::kKcagcRecordBytes);
  EXPECT_FALSE(kw::EncodeKcagcArrayRun(kw::KcagcArray::kSeeds, 2000, 0,
                                       Span<const uint32_t>(values.data(), values.size()), ByteSpan(record.data(), record.size()))
                   .ok());
  const Result<size_t> n = kw::EncodeKcagcArrayRun(kw::KcagcArray::kSeeds, 2000, 979,
                                                   Span<const uint32_t>(values.data(), kw::kKcagcValuesPerRecord),
                                                   ByteSpan(record.data(), record.size()));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, kw::kKcagcRecordBytes);
  const Result<kw::KcagcArrayRun> run = kw::DecodeKcagcArrayRun(ConstByteSpan(record.data(), *n));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->count(), kw::kKcagcValuesPerRecord);
  EXPECT_EQ(run->at(0), 3u);
  // A run past its array's end, and an unknown array, are refused.
  StoreU32Le(1999, record.data() + 4);
  EXPECT_FALSE(kw::DecodeKcagcArrayRun(ConstByteSpan(record.data(), *n)).ok());
  StoreU32Le(2000, record.data() + 4);
  StoreU32Le(99, record.data());
  EXPECT_FALSE(kw::DecodeKcagcArrayRun(ConstByteSpan(record.data(), *n)).ok());
}

TEST(KcagcJobFormat, ContributeAndStageRoundTrip) {
  kw::KcagcContribute c{kw::KcagcContribution::kLocalSeeding, 12, 0.5f, 1048576.0f, 7, 0xabcdefull};
  uint8_t cb[kw::kKcagcContributeBytes];
  kw::EncodeKcagcContribute(c, cb);
  const Result<kw::KcagcContribute> c2 = kw::DecodeKcagcContribute(ConstByteSpan(cb));
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->aggregation, 12u);
  EXPECT_EQ(c2->scale, 1048576.0f);
  EXPECT_EQ(c2->stream, 0xabcdefull);
  c.clip = 0.0f;  // not a code
  kw::EncodeKcagcContribute(c, cb);
  EXPECT_FALSE(kw::DecodeKcagcContribute(ConstByteSpan(cb)).ok());

  kw::KcagcStage s{kw::KcagcPoints::kVirtual, 9, 1, 4, 30, 2, 1, 5};
  uint8_t sb[kw::kKcagcStageBytes];
  kw::EncodeKcagcStage(s, sb);
  const Result<kw::KcagcStage> s2 = kw::DecodeKcagcStage(ConstByteSpan(sb));
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->tree_node, 9u);
  EXPECT_EQ(s2->child, 5u);
  s.part = 2;  // part >= parts
  kw::EncodeKcagcStage(s, sb);
  EXPECT_FALSE(kw::DecodeKcagcStage(ConstByteSpan(sb)).ok());
}

TEST(KcagcLabels, ReadsOneClassPerNodeAndExplainsErrors) {
  const auto dir = std::filesystem::temp_directory_path() / ("kcagc_labels_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* text) {
    std::ofstream(dir / "labels.tsv") << text;
    return (dir / "labels.tsv").string();
  };
  KcagcLabels labels;
  EXPECT_EQ(ReadKcagcLabels(write("0\t1\n2\t0\n"), &labels), "");
  EXPECT_EQ(labels.of_node, (std::vector<int32_t>{1, -1, 0}));
  EXPECT_EQ(labels.classes, 2u);
  EXPECT_NE(ReadKcagcLabels(write("0\t1\n0\t2\n"), &labels).find(":2: node 0 has a second class"), std::string::npos);
  EXPECT_NE(ReadKcagcLabels(write("0 1\n"), &labels).find(":1: expected"), std::string::npos);
  EXPECT_NE(ReadKcagcLabels((dir / "none.tsv").string(), &labels).find("cannot be read"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(KcagcChannel, CloseReleasesAWaitingAsk) {
  KcagcChannel channel;
  std::thread worker([&] {
    const KcagcAnswer a = channel.Ask(KcagcRequest{});
    EXPECT_EQ(a.status.code(), StatusCode::kAborted);
  });
  KcagcRequest r;
  bool wants = false;
  while (!channel.Take(&r, &wants)) std::this_thread::yield();
  EXPECT_TRUE(wants);
  channel.Close(Status::Aborted());
  worker.join();
  EXPECT_EQ(channel.Ask(KcagcRequest{}).status.code(), StatusCode::kAborted);
}

TEST(KcagcChannel, AnswersInOrder) {
  KcagcChannel channel;
  std::thread worker([&] {
    KcagcRequest post;
    post.what = "first";
    channel.Post(std::move(post));
    KcagcRequest ask;
    ask.what = "second";
    const KcagcAnswer a = channel.Ask(std::move(ask));
    EXPECT_TRUE(a.status.ok());
    EXPECT_EQ(a.sum, (std::vector<uint32_t>{42}));
  });
  std::vector<std::string> seen;
  while (seen.size() < 2) {
    KcagcRequest r;
    bool wants = false;
    if (!channel.Take(&r, &wants)) {
      channel.WaitForRequest(std::chrono::milliseconds(10));
      continue;
    }
    seen.push_back(r.what);
    if (wants) channel.Answer(KcagcAnswer{Status::Ok(), {42}, {}});
  }
  worker.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"first", "second"}));
}

ServerConfig KcagcConfig() {
  ServerConfig config = DefaultServerConfigWithJobs();
  config.tls_ca_cert = "ca.crt";
  config.tls_server_cert = "server.crt";
  config.tls_server_key = "server.key";
  config.credentials_dir = "creds";
  config.job = "kcagc";
  return config;
}

std::string Problem(const ServerConfig& config) {
  const ConfigStatus status = ValidateConfig(config);
  return status.ok ? std::string() : status.message;
}

TEST(KcagcKind, RefusesBadOptionsClearly) {
  ServerConfig config = KcagcConfig();
  Options<KcagcJobConfig>(config).mode = "spectral";
  EXPECT_NE(Problem(config).find("kcagc_mode: 'spectral' is not one of basic, kcagc, tree, joint"), std::string::npos);
  config = KcagcConfig();
  Options<KcagcJobConfig>(config).mode = "joint";
  Options<KcagcJobConfig>(config).space = "projected";
  EXPECT_NE(Problem(config).find("kcagc_space: kcagc_mode=joint computes the whitened space only"), std::string::npos);
  Options<KcagcJobConfig>(config).space = "whitened";
  Options<KcagcJobConfig>(config).clusters = 7;
  EXPECT_EQ(Problem(config), "");
  config = KcagcConfig();
  Options<KcagcJobConfig>(config).local_clusters = "2x";
  EXPECT_NE(Problem(config).find("kcagc_local_clusters: '2x' is not a positive number or a multiple of k"),
            std::string::npos);
  config = KcagcConfig();
  Options<KcagcJobConfig>(config).labels = "/nonexistent/labels.tsv";
  EXPECT_NE(Problem(config).find("kcagc_labels: /nonexistent/labels.tsv: cannot be read"), std::string::npos);
  config = KcagcConfig();
  Options<KcagcJobConfig>(config).iterations = 0;
  EXPECT_NE(Problem(config).find("kcagc_iterations: must be 1..10000"), std::string::npos);
  config = KcagcConfig();
  Options<KcagcJobConfig>(config).clusters = 7;
  Options<KcagcJobConfig>(config).local_clusters = "2k";
  EXPECT_EQ(Problem(config), "");
}

TEST(KcagcJob, WithoutKItEndsAtOnceSayingSo) {
  const ServerConfig config = KcagcConfig();  // kcagc_clusters 0, no labels
  std::unique_ptr<Job> job = MakeJob(config, "kcagc", 1, {0, 1});
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->Begin(0).empty());
  EXPECT_TRUE(job->finished());
  EXPECT_FALSE(job->succeeded());
  EXPECT_NE(static_cast<KcagcJob&>(*job).failure().find("give kcagc_clusters"), std::string::npos);
}

TEST(KcagcJob, OneParticipantIsNotACollaboration) {
  ServerConfig config = KcagcConfig();
  Options<KcagcJobConfig>(config).clusters = 3;
  std::unique_ptr<Job> job = MakeJob(config, "kcagc", 1, {4});
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->Begin(0).empty());
  EXPECT_TRUE(job->finished());
  EXPECT_NE(static_cast<KcagcJob&>(*job).failure().find("needs 2 to 1024 participants; 1 joined"), std::string::npos);
}

TEST(KcagcJob, StartsWithParametersAndAWelcomeEach) {
  ServerConfig config = KcagcConfig();
  Options<KcagcJobConfig>(config).clusters = 3;
  std::unique_ptr<Job> job = MakeJob(config, "kcagc", 1, {9, 4});
  ASSERT_NE(job, nullptr);
  const std::vector<RoundStart> starts = job->Begin(0);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].devices, (std::vector<uint32_t>{4, 9}));
  const Result<kw::KcagcParameters> p =
      kw::DecodeKcagcParameters(ConstByteSpan(starts[0].parameters.data(), starts[0].parameters.size()));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->participants, 2u);
  EXPECT_EQ(p->clusters, 3u);
  const std::vector<DeviceData> data = job->TakeData();
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[1].device, 9u);
  const Result<kw::KcagcWelcome> w = kw::DecodeKcagcWelcome(ConstByteSpan(data[1].bytes.data(), data[1].bytes.size()));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->index, 1u);
  // A participant that disagrees on the graph ends the run before any sum.
  uint8_t ready[kw::kKcagcReadyBytes];
  kw::EncodeKcagcReady(kw::KcagcReady{100, 5}, ready);
  job->OnUpload(4, 1, kw::kKcagcReady, std::vector<uint8_t>(ready, ready + sizeof ready), 1);
  kw::EncodeKcagcReady(kw::KcagcReady{101, 5}, ready);
  job->OnUpload(9, 1, kw::kKcagcReady, std::vector<uint8_t>(ready, ready + sizeof ready), 2);
  EXPECT_NE(static_cast<KcagcJob&>(*job).failure().find("disagree on the graph"), std::string::npos);
  const std::vector<DeviceData> aborts = job->TakeData();
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].kind, kw::kKcagcAbort);
  // Round 2 in the next call, then the reports end the job.
  const std::vector<RoundStart> reports = job->Poll(3);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].round, 2u);
  nodefl_wire_JobReport report = nodefl_wire_JobReport_init_zero;
  report.code = static_cast<uint32_t>(StatusCode::kAborted);
  job->OnReport(4, 2, report, 4);
  job->OnReport(9, 2, report, 5);
  EXPECT_TRUE(job->finished());
  EXPECT_FALSE(job->succeeded());
}

}  // namespace
}  // namespace nodefl::server::jobs
