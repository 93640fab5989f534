// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk HCT job end to end over TLS: nodefl-server's job runner and
// 34 emulated SDK devices (karate), in both privacy modes. Checks what the
// devices released against what the server recorded, the published tree
// and codebook against what each device kept, the devices' ledgers, and
// runs the neighbour-recovery attack on the server's transcript.
#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "nodefl/server/jobs/fedwalk_kind.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/hct/codebook.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"
#include "nodefl/server/fedwalk/attack/neighbour_recovery.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "nodefl/server/fedwalk/common/transcript_file.h"
#include "nodefl/emulator/emulated_device.h"
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
struct KarateFleet {
  dataset::Graph graph;
  std::unique_ptr<TestDeployment> deployment;
  std::unique_ptr<ServerUnderTest> server;
  tls::TlsCredentials ca;
  emulator::FleetStats stats;
  std::unique_ptr<emulator::ConnectGate> gate;
  emulator::FleetSetup fleet;
  // Declared before the devices: their strands belong to it, so it must be
  // destroyed after them.
  asio::io_context io;
  std::vector<std::shared_ptr<emulator::EmulatedDevice>> devices;
  fs::path out;
};

void RunKarate(KarateFleet& f, const std::string& job, const std::string& mode,
               const std::function<void(server::ServerConfig&)>& tune = {}) {
  const dataset::LoadResult loaded = dataset::LoadGraph(fs::path(NODEFL_DATASETS_DIR) / "karate");
  ASSERT_TRUE(loaded.ok) << "the karate dataset is required: " << loaded.error;
  f.graph = loaded.graph;
  const dataset::Graph& g = f.graph;
  std::vector<uint32_t> ids(g.num_nodes);
  std::iota(ids.begin(), ids.end(), 0u);
  f.deployment = std::make_unique<TestDeployment>(ids, /*seed=*/77);
  ASSERT_TRUE(f.deployment->ok()) << f.deployment->error();
  f.out = f.deployment->dir() / "out";
  server::ServerConfig config = f.deployment->BaseConfig();
  config.job = job;
  server::jobs::Options<server::jobs::FedWalkJobConfig>(config).mode = mode;
  config.job_quorum = g.num_nodes;
  config.exit_after_jobs = 1;
  config.job_round_deadline_ms = 10000;
  config.output_dir = f.out.string();
  config.compute_threads = 2;
  if (tune) tune(config);
  const server::ConfigStatus valid = server::ValidateConfig(config);
  ASSERT_TRUE(valid.ok) << valid.message;
  f.server = std::make_unique<ServerUnderTest>(config, f.deployment->dir() / "server.log");
  ASSERT_TRUE(f.server->ok()) << f.server->error();

  ASSERT_TRUE(f.ca.LoadCaChain(ConstByteSpan(f.deployment->pki().ca_der())).ok());
  f.gate = std::make_unique<emulator::ConnectGate>(16);
  f.fleet.server = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.server->port());
  f.fleet.server_name = "localhost";
  f.fleet.ca = &f.ca;
  f.fleet.stats = &f.stats;
  f.fleet.gate = f.gate.get();
  f.fleet.max_connect_attempts = 5;
  f.fleet.keep_tree_and_bin_plan = true;
  f.fleet.vertex_count = g.num_nodes;
  f.fleet.job = job;
  f.fleet.fedwalk_mode = mode;
  // Strict-mode tree jobs fit the devices' default budget (that is part of
  // what is tested); paper mode's exact M_v and the device-to-device walks
  // (per edge, every later hop counts) need a device that consents.
  f.fleet.budget = (mode == "paper" || job == "fedwalk") ? PrivacyBudget::Unlimited() : PrivacyBudget();
  asio::io_context& io = f.io;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    emulator::DeviceSetup setup;
    setup.id = v;
    setup.neighbours.assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                            g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
    setup.certificate_der = f.deployment->device(v).certificate_der;
    setup.private_key_der = f.deployment->device(v).private_key_der;
    auto device = std::make_shared<emulator::EmulatedDevice>(io, f.fleet, std::move(setup));
    ASSERT_TRUE(device->Init().ok()) << "device " << v;
    f.devices.push_back(std::move(device));
  }
  for (auto& d : f.devices) d->Start();
  ServerUnderTest& server = *f.server;
  const bool ended = RunUntil(
      io, [&] { return !server.running() && f.stats.finished + f.stats.failed >= g.num_nodes; },
      milliseconds(60000));
  for (auto& d : f.devices) d->Stop();
  io.restart();
  io.run_for(milliseconds(500));
  ASSERT_TRUE(ended) << "finished " << f.stats.finished << ", failed " << f.stats.failed << "\n" << server.LogText();
  EXPECT_EQ(server.WaitForExit(milliseconds(1000)), std::optional<int>(0)) << server.LogText();
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
