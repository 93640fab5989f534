// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk HCT coordinator without a network: uploads made by the SDK's
// device code (SimulateHctUploads) are fed to FedWalkHctJob the way
// connections would, and the published artefacts are parsed back.
#include "nodefl/server/jobs/fedwalk_hct_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "nodefl/core/little_endian.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/hct/codebook.h"
#include "nodefl/server/fedwalk/sim/hct_simulation.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::jobs {
namespace {

namespace fw = nodefl::fedwalk;
using fedwalk::SimulatedJob;

nodefl_wire_JobReport Report(uint32_t code = 0, double epsilon = 0, bool unbounded = false) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT;
  r.code = code;
  r.releases = epsilon > 0 ? 1 : 0;
  r.epsilon = epsilon;
  r.unbounded = unbounded;
  return r;
}

std::vector<std::vector<uint32_t>> Neighbours(const dataset::Graph& g) {
  std::vector<std::vector<uint32_t>> n(g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    n[v].assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
  }
  return n;
}

std::vector<uint8_t> VectorBytes(const SimulatedJob& sim, uint32_t v) {
  const uint32_t k = sim.transcript.bins;
  std::vector<uint8_t> b(size_t{k} * 4);
  for (uint32_t i = 0; i < k; ++i) StoreF32Le(sim.transcript.dictionary[size_t{v} * k + i], b.data() + 4 * i);
  return b;
}

std::vector<uint8_t> UploadBytes(const SimulatedJob& sim, uint32_t v) {
  std::vector<uint8_t> b;
  if (sim.transcript.mode == PrivacyMode::kPaper) {
    const std::vector<float>& m = sim.transcript.ordered_matrices.at(v);
    b.resize(4 + 4 * m.size());
    StoreU32Le(static_cast<uint32_t>(m.size() / sim.transcript.bins), b.data());
    for (size_t i = 0; i < m.size(); ++i) StoreF32Le(m[i], b.data() + 4 + 4 * i);
  } else {
    const std::vector<int32_t>& h = sim.transcript.histograms.at(v);
    b.resize(4 * h.size());
    for (size_t i = 0; i < h.size(); ++i) StoreI32Le(h[i], b.data() + 4 * i);
  }
  return b;
}

constexpr uint32_t kDegreeVector = static_cast<uint32_t>(fw::HctArtefact::kDegreeVector);

uint32_t UploadKind(PrivacyMode mode) {
  return static_cast<uint32_t>(mode == PrivacyMode::kPaper ? fw::HctArtefact::kOrderedMatrix
                                                           : fw::HctArtefact::kDegreeHistogram);
}

// Job compute runs on this executor: a test decides when it runs, so no
// test waits on a thread or sleeps.
ManualExecutor& Compute() {
  static ManualExecutor executor;
  return executor;
}

// Runs the compute phase, then polls the job once: it publishes round 3.
std::vector<RoundStart> WaitForPublish(FedWalkHctJob& job, uint64_t now_us) {
  EXPECT_EQ(Compute().RunAll(), 1u);
  return job.Poll(now_us);
}

class FedWalkHctJobTest : public ::testing::TestWithParam<PrivacyMode> {
 protected:
  void SetUp() override {
    graph_ = dataset::GeneratePlantedPartition(4, 15, 0.4, 0.03, 7);
    neighbours_ = Neighbours(graph_);
    fw::HctParameters params;
    params.mode = GetParam();
    params.bins = 3;
    params.codebook_k = 8;
    // The simulated devices use the job's bin plan only through the
    // parameters; the job draws its own plan, so uploads are made against
    // the simulation's plan: fine for the coordinator, which never checks
    // counts against its plan (it cannot: they are noised).
    sim_ = fedwalk::SimulateHctUploads(neighbours_, params, 3);
    ASSERT_TRUE(sim_.error.empty()) << sim_.error;
    options_.params = params;
    options_.round_deadline_ms = 1000;
    options_.compute_threads = 2;
    options_.bin_plan_seed = 11;
    options_.executor = &Compute();
  }

  std::vector<uint32_t> All() const {
    std::vector<uint32_t> ids(graph_.num_nodes);
    for (uint32_t v = 0; v < graph_.num_nodes; ++v) ids[v] = v;
    return ids;
  }

  double UploadEpsilon() const { return GetParam() == PrivacyMode::kPaper ? 0.0 : 2.0; }

  dataset::Graph graph_;
  std::vector<std::vector<uint32_t>> neighbours_;
  SimulatedJob sim_;
  FedWalkHctOptions options_;
};

TEST_P(FedWalkHctJobTest, AllDevicesCompleteAndTheArtefactsParse) {
  FedWalkHctJob job(options_, All());
  const uint32_t n = graph_.num_nodes;
  std::vector<RoundStart> r1 = job.Begin(0);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].round, fw::kRoundBinning);
  EXPECT_EQ(r1[0].devices.size(), n);
  ASSERT_EQ(r1[0].artefacts.size(), 1u);
  const std::vector<uint8_t>& plan = *r1[0].artefacts[0].bytes;
  ASSERT_EQ(plan.size(), n);
  // Random bins, every one of the k bins used, sizes within one of n/k.
  std::vector<uint32_t> sizes(3, 0);
  for (uint8_t b : plan) {
    ASSERT_LT(b, 3u);
    ++sizes[b];
  }
  for (uint32_t s : sizes) EXPECT_NEAR(s, n / 3.0, 1.0);
  Result<fw::HctParameters> params = fw::DecodeHctParameters(ConstByteSpan(r1[0].parameters));
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->vertex_count, n);
  EXPECT_EQ(params->mode, GetParam());

  std::vector<RoundStart> r2;
  for (uint32_t v = 0; v < n; ++v) {
    EXPECT_TRUE(job.OnUpload(v, 1, kDegreeVector, VectorBytes(sim_, v), 10).empty());
    r2 = job.OnReport(v, 1, Report(0, 2.0), 10);
    if (v + 1 < n) {
      EXPECT_TRUE(r2.empty());
    }
  }
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].round, fw::kRoundMatrix);
  ASSERT_EQ(r2[0].artefacts.size(), 1u);
  // The dictionary carries exactly the uploaded vectors.
  const std::vector<uint8_t>& dict = *r2[0].artefacts[0].bytes;
  ASSERT_EQ(dict.size(), size_t{n} * 3 * 4);
  for (size_t i = 0; i < size_t{n} * 3; ++i) EXPECT_EQ(LoadF32Le(dict.data() + 4 * i), sim_.transcript.dictionary[i]);

  for (uint32_t v = 0; v < n; ++v) {
    EXPECT_TRUE(job.OnUpload(v, 2, UploadKind(GetParam()), UploadBytes(sim_, v), 20).empty());
    EXPECT_TRUE(job.OnReport(v, 2, Report(0, UploadEpsilon(), GetParam() == PrivacyMode::kPaper), 20).empty());
  }
  // A device that reconnected repeats its uploads (same values) and its
  // report: ignored, not counted twice, not a protocol error.
  EXPECT_TRUE(job.OnUpload(0, 1, kDegreeVector, VectorBytes(sim_, 0), 21).empty());
  EXPECT_TRUE(job.OnUpload(0, 2, UploadKind(GetParam()), UploadBytes(sim_, 0), 21).empty());
  EXPECT_TRUE(job.OnReport(0, 2, Report(0, UploadEpsilon()), 21).empty());
  EXPECT_EQ(job.devices().at(0).state, HctDeviceRecord::State::kPublish);
  EXPECT_EQ(job.summary().repeated_uploads, 2u);
  std::vector<RoundStart> r3 = WaitForPublish(job, 30);
  ASSERT_EQ(r3.size(), 1u) << job.compute_error();
  EXPECT_EQ(r3[0].round, fw::kRoundPublish);
  ASSERT_EQ(r3[0].artefacts.size(), 2u);
  std::optional<fedwalk::HctTree> tree = fedwalk::HctTree::Parse(*r3[0].artefacts[0].bytes);
  ASSERT_TRUE(tree.has_value());
  EXPECT_EQ(tree->leaf_count(), n);
  std::optional<fedwalk::Codebook> codebook = fedwalk::Codebook::Parse(*r3[0].artefacts[1].bytes);
  ASSERT_TRUE(codebook.has_value());
  EXPECT_EQ(codebook->vertex_count(), n);
  for (uint32_t v = 0; v < n; ++v) {
    // At most K entries; with Eq. 12's raw score the vertex itself (score 0,
    // the maximum) leads its row unless exact ties crowd it out.
    const auto row = codebook->row(v);
    ASSERT_GE(row.size(), 1u);
    EXPECT_LE(row.size(), 8u);
    const bool has_self = std::any_of(row.begin(), row.end(), [v](const auto& e) { return e.vertex == v; });
    EXPECT_TRUE(has_self || codebook->truncated_mass(v) > 0) << v;
  }

  for (uint32_t v = 0; v < n; ++v) job.OnReport(v, 3, Report(), 40);
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.succeeded());
  EXPECT_EQ(job.summary().completed, n);
  EXPECT_EQ(job.summary().missed, 0u);
  EXPECT_EQ(job.summary().vertices_in_tree, n);
  EXPECT_DOUBLE_EQ(job.summary().epsilon_max, 2.0 + UploadEpsilon());
  EXPECT_DOUBLE_EQ(job.summary().epsilon_median, 2.0 + UploadEpsilon());
  EXPECT_EQ(job.summary().unbounded_devices, GetParam() == PrivacyMode::kPaper ? n : 0u);
  EXPECT_GT(job.summary().dissimilarity_bytes, 0u);
}

TEST_P(FedWalkHctJobTest, LateAndMisbehavingDevicesAreLeftOutAndNamed) {
  FedWalkHctJob job(options_, All());
  const uint32_t n = graph_.num_nodes;
  (void)job.Begin(0);
  // Device 0 never answers; device 1 uploads a vector of the wrong size;
  // device 2 reports an error; device 3 reports without uploading.
  for (uint32_t v = 1; v < n; ++v) {
    std::vector<uint8_t> bytes = VectorBytes(sim_, v);
    if (v == 1) bytes.pop_back();
    if (v != 3) job.OnUpload(v, 1, kDegreeVector, bytes, 10);
    job.OnReport(v, 1, Report(v == 2 ? 8 : 0, 2.0), 10);
  }
  EXPECT_FALSE(job.finished());
  // Round 1's deadline passes: round 2 starts without device 0.
  std::vector<RoundStart> r2 = job.Poll(2'000'000);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].devices.size(), n - 4);
  const std::vector<uint8_t>& dict = *r2[0].artefacts[0].bytes;
  for (uint32_t v : {0u, 1u, 2u, 3u}) EXPECT_TRUE(std::isnan(LoadF32Le(dict.data() + size_t{v} * 12))) << v;
  for (uint32_t v = 4; v < n; ++v) {
    job.OnUpload(v, 2, UploadKind(GetParam()), UploadBytes(sim_, v), 2'000'010);
    job.OnReport(v, 2, Report(0, UploadEpsilon()), 2'000'010);
  }
  std::vector<RoundStart> r3 = WaitForPublish(job, 2'000'020);
  ASSERT_EQ(r3.size(), 1u) << job.compute_error();
  std::optional<fedwalk::HctTree> tree = fedwalk::HctTree::Parse(*r3[0].artefacts[0].bytes);
  ASSERT_TRUE(tree.has_value());
  EXPECT_EQ(tree->leaf_count(), n - 4);
  std::optional<fedwalk::Codebook> codebook = fedwalk::Codebook::Parse(*r3[0].artefacts[1].bytes);
  ASSERT_TRUE(codebook.has_value());
  EXPECT_TRUE(codebook->row(0).empty());  // not in the tree: no row
  // Round 3's deadline passes with nobody reporting.
  job.Poll(4'000'100);
  ASSERT_TRUE(job.finished());
  EXPECT_FALSE(job.succeeded());
  EXPECT_EQ(job.summary().completed, 0u);
  EXPECT_EQ(job.devices().at(0).state, HctDeviceRecord::State::kMissed);
  EXPECT_EQ(job.devices().at(0).failed_round, 1u);
  for (uint32_t v : {1u, 2u, 3u}) {
    EXPECT_EQ(job.devices().at(v).state, HctDeviceRecord::State::kFailed) << v;
    EXPECT_FALSE(job.devices().at(v).why.empty());
  }
  EXPECT_EQ(job.devices().at(5).state, HctDeviceRecord::State::kMissed);
  EXPECT_EQ(job.devices().at(5).failed_round, 3u);
}

TEST_P(FedWalkHctJobTest, UploadsOfTheOtherModeOrRoundAreRefused) {
  FedWalkHctJob job(options_, All());
  (void)job.Begin(0);
  // A round-2 upload during round 1 is out of phase.
  job.OnUpload(0, 2, UploadKind(GetParam()), UploadBytes(sim_, 0), 1);
  EXPECT_EQ(job.devices().at(0).state, HctDeviceRecord::State::kFailed);
  EXPECT_EQ(job.summary().protocol_errors, 1u);
  // A non-finite degree vector poisons every distance: refused.
  std::vector<uint8_t> bad = VectorBytes(sim_, 1);
  StoreF32Le(std::numeric_limits<float>::infinity(), bad.data());
  job.OnUpload(1, 1, kDegreeVector, bad, 2);
  EXPECT_EQ(job.devices().at(1).state, HctDeviceRecord::State::kFailed);
  // So would an absurdly large one.
  std::vector<uint8_t> huge = VectorBytes(sim_, 2);
  StoreF32Le(1e12f, huge.data());
  job.OnUpload(2, 1, kDegreeVector, huge, 2);
  EXPECT_EQ(job.devices().at(2).state, HctDeviceRecord::State::kFailed);
  // Reports from strangers change nothing.
  job.OnReport(999, 1, Report(), 3);
  EXPECT_EQ(job.summary().protocol_errors, 2u);
}

// Eq. 10 clipped to [-B, 0] (fedwalk_score_clip): the pipeline reports B as
// the sensitivity and 2·ε·B per raw encoding, ε per scaled one (built in one
// pass, B being known up front); the raw maximum is still reported. The
// job passes the option through to its summary.
TEST_P(FedWalkHctJobTest, ScoreClipMakesTheSensitivityB) {
  fedwalk::HctPipelineOptions options;
  options.codebook.epsilon = 2.0;
  options.codebook.k = 8;
  const fedwalk::HctPipelineResult raw = fedwalk::RunHctPipeline(sim_.transcript, All(), options);
  ASSERT_TRUE(raw.error.empty()) << raw.error;
  ASSERT_GT(raw.max_abs_score, 0.0);
  EXPECT_EQ(raw.score_sensitivity, raw.max_abs_score);
  EXPECT_DOUBLE_EQ(raw.epsilon_per_encoding, 2 * 2.0 * raw.max_abs_score);

  // A power of two below the largest score, so that 1/(2B) is exact below.
  const double clip = std::exp2(std::floor(std::log2(raw.max_abs_score / 4)));
  options.codebook.score_clip = clip;
  const fedwalk::HctPipelineResult clipped = fedwalk::RunHctPipeline(sim_.transcript, All(), options);
  ASSERT_TRUE(clipped.error.empty()) << clipped.error;
  EXPECT_EQ(clipped.score_sensitivity, clip);
  EXPECT_EQ(clipped.max_abs_score, raw.max_abs_score);
  EXPECT_DOUBLE_EQ(clipped.epsilon_per_encoding, 2 * 2.0 * clip);

  options.scaled_encoder = true;
  const fedwalk::HctPipelineResult scaled = fedwalk::RunHctPipeline(sim_.transcript, All(), options);
  ASSERT_TRUE(scaled.error.empty()) << scaled.error;
  EXPECT_EQ(scaled.score_sensitivity, clip);
  EXPECT_EQ(scaled.epsilon_per_encoding, 2.0);
  // exp(ε · max(u, -B) / (2B)) is the codebook of ε' = ε / (2B) with the
  // same clip and no scaling.
  options.scaled_encoder = false;
  options.codebook.epsilon = 2.0 / (2 * clip);
  const fedwalk::HctPipelineResult same = fedwalk::RunHctPipeline(sim_.transcript, All(), options);
  ASSERT_TRUE(same.error.empty()) << same.error;
  EXPECT_EQ(*scaled.codebook, *same.codebook);

  // Through the job: the summary carries B.
  options_.score_clip = clip;
  FedWalkHctJob job(options_, All());
  const uint32_t n = graph_.num_nodes;
  (void)job.Begin(0);
  for (uint32_t v = 0; v < n; ++v) {
    job.OnUpload(v, 1, kDegreeVector, VectorBytes(sim_, v), 10);
    job.OnReport(v, 1, Report(0, 2.0), 10);
  }
  for (uint32_t v = 0; v < n; ++v) {
    job.OnUpload(v, 2, UploadKind(GetParam()), UploadBytes(sim_, v), 20);
    job.OnReport(v, 2, Report(0, UploadEpsilon(), GetParam() == PrivacyMode::kPaper), 20);
  }
  ASSERT_EQ(WaitForPublish(job, 30).size(), 1u) << job.compute_error();
  EXPECT_EQ(job.summary().score_sensitivity, clip);
  EXPECT_GT(job.summary().max_abs_score, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Modes, FedWalkHctJobTest, ::testing::Values(PrivacyMode::kStrict, PrivacyMode::kPaper),
                         [](const auto& param_info) { return std::string(PrivacyModeName(param_info.param)); });

}  // namespace
}  // namespace nodefl::server::jobs
