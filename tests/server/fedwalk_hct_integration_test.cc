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
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "nodefl/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/codebook.h"
#include "nodefl/server/fedwalk/hct_tree.h"
#include "nodefl/server/fedwalk/neighbour_recovery.h"
#include "nodefl/server/fedwalk/transcript_file.h"
#include "emulated_device.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class FedWalkHctKarateTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FedWalkHctKarateTest, EveryDeviceCompletesAndTheArtefactsAgree) {
  const std::string mode = GetParam();
  const bool paper = mode == "paper";
  const dataset::LoadResult loaded = dataset::LoadGraph(fs::path(NODEFL_DATASETS_DIR) / "karate");
  ASSERT_TRUE(loaded.ok) << "the karate dataset is required: " << loaded.error;
  const dataset::Graph& g = loaded.graph;
  std::vector<uint32_t> ids(g.num_nodes);
  std::iota(ids.begin(), ids.end(), 0u);
  TestDeployment deployment(ids, /*seed=*/77);
  ASSERT_TRUE(deployment.ok()) << deployment.error();
  const fs::path out = deployment.dir() / "out";
  server::ServerConfig config = deployment.BaseConfig();
  config.job = "fedwalk-hct";
  config.fedwalk_mode = mode;
  config.job_quorum = g.num_nodes;
  config.exit_after_jobs = 1;
  config.job_round_deadline_ms = 10000;
  config.output_dir = out.string();
  config.compute_threads = 2;
  const server::ConfigStatus valid = server::ValidateConfig(config);
  ASSERT_TRUE(valid.ok) << valid.message;
  ServerUnderTest server(config, deployment.dir() / "server.log");
  ASSERT_TRUE(server.ok()) << server.error();

  tls::TlsCredentials ca;
  ASSERT_TRUE(ca.LoadCaChain(ConstByteSpan(deployment.pki().ca_der())).ok());
  emulator::FleetStats stats;
  emulator::ConnectGate gate(16);
  emulator::FleetSetup fleet;
  fleet.server = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port());
  fleet.server_name = "localhost";
  fleet.ca = &ca;
  fleet.stats = &stats;
  fleet.gate = &gate;
  fleet.max_connect_attempts = 5;
  fleet.keep_tree_and_bin_plan = true;
  fleet.vertex_count = g.num_nodes;
  asio::io_context io;
  std::vector<std::shared_ptr<emulator::EmulatedDevice>> devices;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    emulator::DeviceSetup setup;
    setup.id = v;
    setup.neighbours.assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                            g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
    setup.certificate_der = deployment.device(v).certificate_der;
    setup.private_key_der = deployment.device(v).private_key_der;
    auto device = std::make_shared<emulator::EmulatedDevice>(io, fleet, std::move(setup));
    ASSERT_TRUE(device->Init().ok()) << "device " << v;
    devices.push_back(std::move(device));
  }
  for (auto& d : devices) d->Start();
  const bool ended = RunUntil(
      io, [&] { return !server.running() && stats.finished + stats.failed >= g.num_nodes; }, milliseconds(40000));
  for (auto& d : devices) d->Stop();
  io.restart();
  io.run_for(milliseconds(500));
  ASSERT_TRUE(ended) << "finished " << stats.finished << ", failed " << stats.failed << "\n" << server.LogText();
  EXPECT_EQ(server.WaitForExit(milliseconds(1000)), std::optional<int>(0)) << server.LogText();
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

INSTANTIATE_TEST_SUITE_P(Modes, FedWalkHctKarateTest, ::testing::Values("strict", "paper"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace nodefl::transport_test
