// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk HCT job end to end over TLS: nodefl-server's job runner and
// 34 emulated SDK devices (karate), in both privacy modes. Checks what the
// devices released against what the server recorded, the published tree
// and codebook against what each device kept, the devices' ledgers, and
// runs the neighbour-recovery attack on the server's transcript.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "nodefl/server/jobs/fedwalk_kind.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/hct/codebook.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"
#include "nodefl/server/fedwalk/attack/neighbour_recovery.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "nodefl/server/fedwalk/common/transcript_file.h"
#include "nodefl/emulator/emulated_device.h"
#include "fleet_test_support.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A server running `job` in `mode` and one emulated device per karate node,
// until the server exits (exit_after_jobs = 1).
using KarateFleet = EmulatedFleet;

void RunKarate(KarateFleet& f, const std::string& job, const std::string& mode,
               const std::function<void(server::ServerConfig&)>& tune = {}) {
  FleetPlan plan;
  plan.dataset = "karate";
  plan.pki_seed = 77;
  plan.configure_server = [&](server::ServerConfig& config) {
    config.job = job;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(config).mode = mode;
    config.job_round_deadline_ms = 10000;
    config.compute_threads = 2;
    if (tune) tune(config);
  };
  plan.configure_devices = [&](emulator::FleetSetup& fleet, const server::ServerConfig&) {
    fleet.keep_tree_and_bin_plan = true;
    fleet.job = job;
    fleet.fedwalk_mode = mode;
    // Strict-mode tree jobs fit the devices' default budget (that is part of
    // what is tested); paper mode's exact M_v and the device-to-device walks
    // (per edge, every later hop counts) need a device that consents.
    fleet.budget = (mode == "paper" || job == "fedwalk") ? PrivacyBudget::Unlimited() : PrivacyBudget();
  };
  RunEmulatedFleet(f, plan);
}

class FedWalkHctKarateTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FedWalkHctKarateTest, EveryDeviceCompletesAndTheArtefactsAgree) {
  const std::string mode = GetParam();
  const bool paper = mode == "paper";
  KarateFleet f;
  RunKarate(f, "fedwalk-hct", mode);
  if (HasFatalFailure()) return;
  const dataset::Graph& g = f.graph;
  const fs::path& out = f.out;
  ServerUnderTest& server = *f.server;
  auto& devices = f.devices;
  EXPECT_TRUE(LogHasLine(server.LogText(), "job_finished",
                         {"verified=true", "mode=" + mode, "participants=34", "completed=34", "missed=0"}))
      << server.LogText();
  EXPECT_TRUE(LogHasLine(server.LogText(), "privacy_ledger", {"mode=" + mode}));

  // What the server published and recorded.
  std::string error;
  const auto transcript = server::fedwalk::LoadTranscript(out / "hct-transcript.bin", &error);
  ASSERT_TRUE(transcript.has_value()) << error;
  const std::vector<uint8_t> tree_bytes = ReadFile(out / "hct-tree.bin");
  const auto tree = server::fedwalk::HctTree::Parse(tree_bytes);
  ASSERT_TRUE(tree.has_value());
  EXPECT_EQ(tree->leaf_count(), 34u);
  const auto codebook = server::fedwalk::Codebook::Parse(ReadFile(out / "hct-codebook.bin"));
  ASSERT_TRUE(codebook.has_value());
  EXPECT_EQ(codebook->vertex_count(), 34u);
  EXPECT_LT(codebook->max_truncated_mass(), 1e-9);  // negligible at the defaults

  const uint32_t k = transcript->bins;
  EXPECT_EQ(k, 3u);  // floor(ln 34)
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    SCOPED_TRACE("device " + std::to_string(v));
    const emulator::EmulatedDevice& d = *devices[v];
    ASSERT_TRUE(d.finished()) << d.last_error();
    const fedwalk::FedWalkHctRole& role = *d.hct_role();
    // The degree vector the device released is the server's dictionary row.
    const Span<const float> c = role.degree_vector();
    ASSERT_EQ(c.size(), k);
    for (uint32_t i = 0; i < k; ++i) {
      EXPECT_EQ(c[i], transcript->dictionary[size_t{v} * k + i]);
      // Strict mode noise is an integer; paper mode's Laplace is not.
      if (!paper) {
        EXPECT_EQ(c[i], std::round(c[i]));
      }
    }
    // The round-2 upload the server recorded is the device's.
    if (paper) {
      EXPECT_EQ(transcript->ordered_matrices.at(v).size(), size_t{g.degree(v)} * k);
      EXPECT_TRUE(role.unbounded_release());
    } else {
      const Span<const int32_t> h = role.degree_histogram();
      const std::vector<int32_t>& recorded = transcript->histograms.at(v);
      ASSERT_EQ(h.size(), recorded.size());
      for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i], recorded[i]);
      EXPECT_FALSE(role.unbounded_release());
    }
    // Ledger: epsilon_bins (+ epsilon_upload in strict mode), as delivered
    // (the discrete scale rounds epsilon down by at most 1e-6 relative).
    const double expected_epsilon = paper ? 2.0 : 4.0;
    EXPECT_LE(d.ledger()->total_epsilon(), expected_epsilon + 1e-12);
    EXPECT_GE(d.ledger()->total_epsilon(), expected_epsilon * (1 - 1e-5));
    // The device kept exactly its neighbours' codebook rows, as published.
    const Span<const fedwalk::HctNeighbour> neighbours = role.neighbours();
    ASSERT_EQ(neighbours.size(), g.degree(v));
    for (size_t i = 0; i < neighbours.size(); ++i) {
      const auto published = codebook->row(neighbours[i].id);
      const Span<const fedwalk::CodebookEntry> kept = role.CodebookRow(i);
      ASSERT_EQ(kept.size(), published.size());
      for (size_t j = 0; j < kept.size(); ++j) {
        EXPECT_EQ(kept[j].vertex, published[j].vertex);
        EXPECT_EQ(kept[j].accept_q31, published[j].accept_q31);
        EXPECT_EQ(kept[j].alias, published[j].alias);
      }
    }
    // It kept the whole tree (fleet.keep_tree_and_bin_plan).
    const ConstByteSpan kept_tree = role.tree();
    ASSERT_EQ(kept_tree.size(), tree_bytes.size());
    EXPECT_TRUE(std::equal(kept_tree.begin(), kept_tree.end(), tree_bytes.begin()));
  }

  // The attack on what the server holds.
  std::vector<std::vector<uint32_t>> truth(g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    truth[v].assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                    g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
  }
  const auto guesses = paper ? server::fedwalk::RecoverFromOrderedMatrices(*transcript)
                             : server::fedwalk::RecoverFromHistograms(*transcript);
  const auto score = server::fedwalk::ScoreGuesses(guesses, *transcript, truth);
  if (paper) {
    EXPECT_GE(score.recall, 0.99);  // the paper's M_v names every neighbour
  } else {
    EXPECT_LT(score.recall, 0.9);
  }
}

// The whole plan: tree, walks, SkipGram. Every walk slot completes, the
// messages per walk agree with Theorem 4.2's recurrence, the devices'
// ledgers hold every encoding at the cost the server announced, and the
// embeddings are written.
class FedWalkKarateTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FedWalkKarateTest, WalksCompleteAndEmbeddingsAreWritten) {
  const std::string mode = GetParam();
  KarateFleet f;
  RunKarate(f, "fedwalk", mode, [](server::ServerConfig& c) {
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).walks_per_vertex = 20;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).walk_timeout_ms = 20000;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).seed = 5;
  });
  if (HasFatalFailure()) return;
  const std::string log = f.server->LogText();
  EXPECT_TRUE(LogHasLine(log, "job_finished",
                         {"kind=fedwalk-walks", "verified=true", "walk_slots=680", "completed=680", "lost=0",
                          "tokens=27200"}))
      << log;
  // Messages per walk: the mean of 680 walks against the recurrence's
  // 32.64 (l = 40, p = 0.2); the per-walk standard deviation is below 2.5,
  // so 5 standard errors are below 0.5.
  const size_t at = log.find(" messages_per_walk=");
  ASSERT_NE(at, std::string::npos);
  const double mean = std::stod(log.substr(at + 19));
  EXPECT_NEAR(mean, 32.64, 0.5);
  // Every device finished the walk job and recorded its encodings.
  uint64_t encodings = 0;
  for (const auto& d : f.devices) {
    ASSERT_NE(d->walk_role(), nullptr);
    EXPECT_TRUE(d->walk_role()->finished());
    encodings += d->walk_role()->stats().encodings;
  }
  EXPECT_EQ(encodings, 27200u);  // one encoding per walk entry
  std::string error;
  const auto model = server::fedwalk::ReadWord2VecText(f.out / "embeddings.w2v", &error);
  ASSERT_TRUE(model.has_value()) << error;
  EXPECT_EQ(model->num_vertices, 34u);
  EXPECT_EQ(model->dim, 128u);
}

// Strict mode's fedwalk is the cluster-histogram job, without device walks:
// fedwalk_histogram_integration_test.cc.
INSTANTIATE_TEST_SUITE_P(Modes, FedWalkKarateTest, ::testing::Values("paper"),
                         [](const auto& param_info) { return std::string(param_info.param); });

INSTANTIATE_TEST_SUITE_P(Modes, FedWalkHctKarateTest, ::testing::Values("strict", "paper"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace nodefl::transport_test
