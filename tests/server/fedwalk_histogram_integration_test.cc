// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Strict FedWalk end to end over TLS: nodefl-server runs `--job fedwalk` in
// strict mode (the cluster-histogram job) and 34 emulated SDK devices
// (karate) take part. Checks that every device made exactly its planned
// releases within its default budget, that the server holds exactly what
// the devices released, that nothing went device to device, and that the
// embeddings are written; then the same with the refined (two-release)
// partition.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "nodefl/server/jobs/fedwalk_kind.h"
#include "nodefl/emulator/emulated_device.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "fleet_test_support.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

using Fleet = EmulatedFleet;

void RunStrictKarate(Fleet& f, const std::function<void(server::ServerConfig&)>& tune) {
  FleetPlan plan;
  plan.dataset = "karate";
  plan.pki_seed = 81;
  plan.configure_server = [&](server::ServerConfig& config) {
    config.job = "fedwalk";
    server::jobs::Options<server::jobs::FedWalkJobConfig>(config).mode = "strict";
    config.job_round_deadline_ms = 10000;
    config.compute_threads = 2;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(config).walks_per_vertex = 10;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(config).dim = 16;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(config).seed = 3;
    tune(config);
  };
  plan.configure_devices = [](emulator::FleetSetup& fleet, const server::ServerConfig&) {
    fleet.job = "fedwalk";
    fleet.fedwalk_mode = "strict";
    fleet.budget = PrivacyBudget();  // the default: strict mode must fit it
  };
  RunEmulatedFleet(f, plan);
}

// histogram-uploads.tsv: device -> its positive cells, "cluster:count,...".
std::map<uint32_t, std::string> ServerUploads(const fs::path& path) {
  std::map<uint32_t, std::string> out;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    out[static_cast<uint32_t>(std::stoul(line.substr(0, tab)))] = line.substr(tab + 1);
  }
  return out;
}

// The published partition (histogram-partition.bin, u16 LE per vertex).
std::vector<uint16_t> ServerPartition(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint16_t> out(bytes.size() / 2);
  for (size_t v = 0; v < out.size(); ++v) out[v] = static_cast<uint16_t>(bytes[2 * v] | bytes[2 * v + 1] << 8);
  return out;
}

// The same form from what the device released: its positive cells of
// clusters that have members (the server drops cells of empty clusters,
// which hold noise only).
std::string PositiveCells(Span<const int32_t> cells, const std::vector<uint16_t>& partition) {
  std::vector<bool> inhabited(cells.size(), false);
  for (uint16_t c : partition) {
    if (c < cells.size()) inhabited[c] = true;
  }
  std::ostringstream o;
  bool first = true;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (cells[c] <= 0 || !inhabited[c]) continue;
    o << (first ? "" : ",") << c << ':' << cells[c];
    first = false;
  }
  return o.str();
}

TEST(FedWalkStrictKarateTest, OneReleasePerDeviceServerSideWalksAndNothingBetweenDevices) {
  Fleet f;
  RunStrictKarate(f, [](server::ServerConfig& c) { server::jobs::Options<server::jobs::FedWalkJobConfig>(c).strict_epsilon = 4; });
  if (HasFatalFailure()) return;
  const std::string log = f.server->LogText();
  EXPECT_TRUE(LogHasLine(log, "job_finished",
                         {"kind=fedwalk-histograms", "verified=true", "partition=random", "releases=1",
                          "clusters=34", "completed=34", "walks=340", "protocol_errors=0"}))
      << log;
  // 340 walks of 40 vertices, less what dead ends cut: a walk stops early
  // at a vertex whose noised row kept no positive cell (karate has a
  // degree-1 vertex, and the device's own entropy draws the noise, so a
  // run may have none or a few). Each dead end loses 1 to 39 tokens.
  const auto tokens = LogNumber(log, "job_finished", "tokens");
  const auto dead_ends = LogNumber(log, "job_finished", "dead_ends");
  ASSERT_TRUE(tokens.has_value() && dead_ends.has_value()) << log;
  EXPECT_LE(*tokens, 13600u - *dead_ends);
  EXPECT_GE(*tokens, 13600u - 39u * *dead_ends);
  EXPECT_LT(*dead_ends, 340u);
  EXPECT_TRUE(LogHasLine(log, "privacy_ledger", {"phase=fedwalk-histograms", "devices_over_plan=0"})) << log;
  // Nothing between devices: no sealed message, no walk message.
  EXPECT_EQ(f.stats.sealed_sent.load(), 0u);
  EXPECT_EQ(f.stats.walks_forwarded.load(), 0u);
  EXPECT_EQ(f.stats.histogram_releases.load(), 34u);
  EXPECT_EQ(f.stats.histogram_failures.load(), 0u);
  const auto uploads = ServerUploads(f.out / "histogram-uploads.tsv");
  const auto partition = ServerPartition(f.out / "histogram-partition.bin");
  ASSERT_EQ(uploads.size(), 34u);
  for (const auto& d : f.devices) {
    const auto* role = d->histogram_role();
    ASSERT_NE(role, nullptr);
    EXPECT_TRUE(role->finished());
    EXPECT_EQ(role->stats().releases, 1u);
    // The ledger holds one release at (just below) the planned epsilon,
    // and the server got exactly what the device released.
    EXPECT_LE(d->ledger()->total_epsilon(), 4.0);
    EXPECT_GE(d->ledger()->total_epsilon(), 4.0 * (1 - 1e-6));
    EXPECT_EQ(uploads.at(d->id()), PositiveCells(role->histogram(), partition)) << "device " << d->id();
  }
  std::string error;
  const auto model = server::fedwalk::ReadWord2VecText(f.out / "embeddings.w2v", &error);
  ASSERT_TRUE(model.has_value()) << error;
  EXPECT_EQ(model->num_vertices, 34u);
  EXPECT_EQ(model->dim, 16u);
  // The published partition: one vertex per cluster (the default).
  ASSERT_EQ(partition.size(), 34u);
  std::vector<bool> seen(34, false);
  for (uint16_t c : partition) {
    ASSERT_LT(c, 34);
    EXPECT_FALSE(seen[c]);
    seen[c] = true;
  }
}

TEST(FedWalkStrictKarateTest, TheRefinedPartitionSpendsTwoReleasesWithinTheTotal) {
  Fleet f;
  RunStrictKarate(f, [](server::ServerConfig& c) {
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).strict_epsilon = 6;
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).strict_partition = "refined";
    server::jobs::Options<server::jobs::FedWalkJobConfig>(c).strict_clusters = 4;
  });
  if (HasFatalFailure()) return;
  const std::string log = f.server->LogText();
  EXPECT_TRUE(LogHasLine(log, "job_finished",
                         {"kind=fedwalk-histograms", "verified=true", "partition=refined", "releases=2",
                          "clusters=34,4", "release_epsilons=3,3", "completed=34", "walks=340"}))
      << log;
  for (const auto& d : f.devices) {
    ASSERT_NE(d->histogram_role(), nullptr);
    EXPECT_EQ(d->histogram_role()->stats().releases, 2u);
    EXPECT_LE(d->ledger()->total_epsilon(), 6.0);
    EXPECT_GE(d->ledger()->total_epsilon(), 6.0 * (1 - 1e-6));
    EXPECT_EQ(d->histogram_role()->histogram().size(), 4u);  // the last round's clusters
  }
  const auto uploads = ServerUploads(f.out / "histogram-uploads.tsv");
  const auto partition = ServerPartition(f.out / "histogram-partition.bin");
  for (const auto& d : f.devices) {
    EXPECT_EQ(uploads.at(d->id()), PositiveCells(d->histogram_role()->histogram(), partition))
        << "device " << d->id();
  }
}

}  // namespace
}  // namespace nodefl::transport_test
