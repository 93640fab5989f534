// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kcagc job end to end over TLS: nodefl-server's job runner with the
// KcagcJob (the coordinator on its worker thread, every sum through the
// AggregationService), and L emulated participants (ParticipantRole: the
// whole graph, its own columns, AggregationClient, peer keys on demand,
// sealed peer messages through the relay). On a small planted-partition
// graph with informative features:
//   - basic kCAGC and kCAGC for L = 2 and 4 (and the tree, local seeding,
//     paper-mode aggregation): the clustering the job writes, and the one
//     every participant received, equal nodefl-kcagc-sim's with the same
//     options and seeds, bit for bit, and so do the secure sums and rounds;
//   - the joint mode (not the paper's) for L = 2 and 4: the same, and the
//     subspace iteration's steps and singular values bit for bit (a
//     participant that multiplied another block than the server's would
//     change them), every participant having taken every block;
//   - a participant that disconnects mid-run ends the job with a clear
//     failure (kcagc_failed, exit status 1), not a hang.
#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kcagc_attributed_graph.h"
#include "nodefl/emulator/emulated_device.h"
#include "nodefl/emulator/kcagc_fleet.h"
#include "nodefl/emulator/shared_pair_keys.h"
#include "nodefl/server/jobs/kcagc_kind.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/sim/features.h"
#include "nodefl/server/kcagc/sim/runs.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
namespace kc = nodefl::server::kcagc;
using std::chrono::milliseconds;
using Config = server::jobs::KcagcJobConfig;

constexpr uint64_t kSeed = 5;
constexpr uint32_t kClusters = 4;

struct Case {
  const char* name;
  const char* mode = "kcagc";
  uint32_t participants = 2;
  const char* seeding = "joint";
  const char* secagg = "robust";
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const dataset::Graph& TestGraph() {
  static const dataset::Graph g = kcagc_test::AttributedPlantedPartition(kClusters, 40, 48, 11);
  return g;
}

// nodefl-kcagc-sim's run with the same options (every one given, so that
// no default can differ).
kc::RunReport Simulate(const Case& c) {
  const dataset::Graph& g = TestGraph();
  std::vector<nodefl::kcagc::Matrix> raw;
  for (const auto& cols : kc::SplitColumns(g.num_feature_dims, c.participants, kSeed)) raw.push_back(kc::DenseSlice(g, cols));
  kc::RunOptions o;
  const std::string mode = c.mode;
  o.mode = mode == "basic" ? kc::Mode::kBasic
           : mode == "tree" ? kc::Mode::kTree
           : mode == "joint" ? kc::Mode::kJoint
                             : kc::Mode::kKcagc;
  o.clusters = kClusters;
  o.local_clusters = kClusters;
  o.filter.kind = nodefl::kcagc::FilterKind::kHalf;
  o.filter.order = 6;
  o.filter.self_loops = true;
  o.space = nodefl::kcagc::ClusterSpace::kWhitened;
  o.space_dims = 0;
  o.seeding = std::string(c.seeding) == "local" ? kc::Seeding::kLocal : kc::Seeding::kJoint;
  o.virtual_nodes = nodefl::kcagc::VirtualNodeKind::kIntersection;
  o.iterations = 10;
  o.local_restarts = 3;
  o.global_restarts = 1;
  o.seed = kSeed;
  kc::SimulatedSecureAggregator aggregator;
  Result<kc::RunReport> r = kc::RunSimulation(kc::GraphViewOf(g), std::move(raw), o, &aggregator);
  EXPECT_TRUE(r.ok()) << r.status().str();
  return r.ok() ? std::move(r).value() : kc::RunReport{};
}

struct JobRun {
  std::unique_ptr<TestDeployment> deployment;
  std::unique_ptr<ServerUnderTest> server;
  tls::TlsCredentials ca;
  emulator::FleetStats stats;
  std::unique_ptr<emulator::ConnectGate> gate;
  emulator::SharedPairKeys shared_keys;
  std::vector<nodefl::kcagc::ParticipantData> data;
  emulator::FleetSetup fleet;
  asio::io_context io;  // before the devices: their strands belong to it
  std::vector<std::shared_ptr<emulator::EmulatedDevice>> devices;
  fs::path out;
  std::optional<int> exit;
};

// Starts the server (job kcagc, quorum L) and L participants; runs until
// the server exits. `drop_after`: device 1 is stopped (or, with `freeze`,
// hung: connected and silent) once it has made that many contributions (0:
// never). `split_for`: the columns are cut for that many participants
// instead of L (0: L). `report_deadline_ms`: the job's rounds' deadline
// (the report round waits that long for a participant that went silent).
void RunJob(JobRun& r, const Case& c, uint32_t drop_after = 0, uint32_t step_timeout_ms = 20000,
            uint32_t split_for = 0, bool freeze = false, uint32_t report_deadline_ms = 20000) {
  const dataset::Graph& g = TestGraph();
  std::vector<uint32_t> ids(c.participants);
  std::iota(ids.begin(), ids.end(), 0u);
  r.deployment = std::make_unique<TestDeployment>(ids, 71);
  ASSERT_TRUE(r.deployment->ok()) << r.deployment->error();
  r.out = r.deployment->dir() / "out";
  const fs::path labels = r.deployment->dir() / "labels.tsv";
  {
    std::ofstream f(labels);
    for (uint32_t v = 0; v < g.num_nodes; ++v) f << v << '\t' << g.labels[g.label_offsets[v]] << '\n';
  }
  server::ServerConfig config = r.deployment->BaseConfig();
  config.job = "kcagc";
  config.job_quorum = c.participants;
  config.exit_after_jobs = 1;
  config.output_dir = r.out.string();
  config.job_round_deadline_ms = report_deadline_ms;
  // A participant that disconnects is given up 2 s after it left: a round
  // that starts meanwhile waits that long for it to come back (the
  // default, 30 s, would hold the failure tests to the round deadline).
  config.offline_grace_ms = 2000;
  Config& o = server::jobs::Options<Config>(config);
  o.mode = c.mode;
  o.clusters = 0;  // from the labels
  o.local_clusters = "k";
  o.filter = "half";
  o.filter_order = 6;
  o.self_loops = true;
  o.space = "whitened";
  o.space_dims = 0;
  o.seeding = c.seeding;
  o.virtual_nodes = "intersection";
  o.iterations = 10;
  o.restarts = 3;
  o.global_restarts = 1;
  o.seed = kSeed;
  o.secagg_mode = c.secagg;
  o.step_timeout_ms = step_timeout_ms;
  o.labels = labels.string();
  const server::ConfigStatus valid = server::ValidateConfig(config);
  ASSERT_TRUE(valid.ok) << valid.message;
  r.server = std::make_unique<ServerUnderTest>(config, r.deployment->dir() / "server.log");
  ASSERT_TRUE(r.server->ok()) << r.server->error();

  ASSERT_TRUE(r.ca.LoadCaChain(ConstByteSpan(r.deployment->pki().ca_der())).ok());
  ASSERT_EQ(emulator::MakeKcagcParticipants(g, split_for != 0 ? split_for : c.participants, kSeed, &r.data), "");
  r.gate = std::make_unique<emulator::ConnectGate>(8);
  r.fleet.server = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), r.server->port());
  r.fleet.server_name = "localhost";
  r.fleet.ca = &r.ca;
  r.fleet.stats = &r.stats;
  r.fleet.gate = r.gate.get();
  r.fleet.max_connect_attempts = 5;
  r.fleet.job = "kcagc";
  r.fleet.kcagc_participants = &r.data;
  r.fleet.shared_pair_keys = &r.shared_keys;
  for (uint32_t id : ids) {
    emulator::DeviceSetup setup;
    setup.id = id;
    setup.certificate_der = r.deployment->device(id).certificate_der;
    setup.private_key_der = r.deployment->device(id).private_key_der;
    auto device = std::make_shared<emulator::EmulatedDevice>(r.io, r.fleet, std::move(setup));
    ASSERT_TRUE(device->Init().ok()) << "device " << id;
    r.devices.push_back(std::move(device));
  }
  for (auto& d : r.devices) d->Start();
  bool dropped = false;
  const bool ended = RunUntil(
      r.io,
      [&] {
        if (drop_after != 0 && !dropped) {
          const nodefl::kcagc::ParticipantRole* role = r.devices[1]->kcagc_role();
          if (role != nullptr && role->stats().contributions >= drop_after) {
            if (freeze) {
              r.devices[1]->Freeze();
            } else {
              r.devices[1]->Stop();
            }
            dropped = true;
          }
        }
        return !r.server->running();
      },
      milliseconds(50000));
  for (auto& d : r.devices) d->Stop();
  r.io.restart();
  r.io.run_for(milliseconds(300));
  ASSERT_TRUE(ended) << "the job did not end\n" << r.server->LogText();
  r.exit = r.server->WaitForExit(milliseconds(2000));
}

// A double as the server's log writes it (the shortest text that reads
// back exactly), so that equal text is an equal value.
std::string LogNumber(double v) {
  char buf[32];
  const auto [end, error] = std::to_chars(buf, buf + sizeof buf, v);
  return error == std::errc() ? std::string(buf, end) : std::string();
}

std::vector<int32_t> ReadAssignment(const fs::path& path) {
  std::ifstream in(path);
  std::vector<int32_t> out;
  uint32_t v = 0;
  int32_t c = 0;
  while (in >> v >> c) {
    EXPECT_EQ(v, out.size());
    out.push_back(c);
  }
  return out;
}

class KcagcJobOverTls : public ::testing::TestWithParam<Case> {};

TEST_P(KcagcJobOverTls, ClusteringAndSecureSumsEqualTheSimulations) {
  const Case c = GetParam();
  const kc::RunReport expected = Simulate(c);
  if (HasFailure()) return;
  JobRun r;
  RunJob(r, c);
  if (HasFatalFailure()) return;
  const std::string log = r.server->LogText();
  EXPECT_EQ(r.exit, std::optional<int>(0)) << log;
  EXPECT_FALSE(LogHasLine(log, "kcagc_failed", {})) << log;
  EXPECT_TRUE(LogHasLine(log, "kcagc_summary",
                         {"succeeded=true", "mode=" + std::string(c.mode),
                          "participants=" + std::to_string(c.participants),
                          "secure_sums=" + std::to_string(expected.cost.scalars),
                          "expected_secure_sums=" + std::to_string(expected.expected_secure_sums),
                          "rounds=" + std::to_string(expected.cost.rounds),
                          "aggregations=" + std::to_string(expected.cost.rounds), "protocol_errors=0",
                          "records_rejected=0"}))
      << "expected " << expected.cost.scalars << " secure sums in " << expected.cost.rounds << " rounds\n"
      << log;
  // The clustering the job wrote, and the one each participant received.
  EXPECT_EQ(ReadAssignment(r.out / "kcagc-assignment.tsv"), expected.assignment);
  for (const auto& d : r.devices) {
    ASSERT_NE(d->kcagc_role(), nullptr);
    EXPECT_TRUE(d->kcagc_role()->finished()) << "device " << d->id();
    EXPECT_EQ(d->kcagc_role()->clustering(), expected.assignment) << "device " << d->id();
    EXPECT_EQ(d->kcagc_role()->stats().clipped, 0u);
    EXPECT_EQ(d->kcagc_role()->stats().spectral_steps, expected.spectral_steps) << "device " << d->id();
  }
  if (std::string(c.mode) == "joint") {
    ASSERT_FALSE(expected.singular_values.empty());
    EXPECT_GT(expected.spectral_steps, 1u);
    EXPECT_TRUE(LogHasLine(log, "kcagc_spectral",
                           {"steps=" + std::to_string(expected.spectral_steps),
                            "block=" + std::to_string(expected.spectral_block),
                            std::string("converged=") + (expected.spectral_converged ? "true" : "false"),
                            "sigma_1=" + LogNumber(expected.singular_values.front()),
                            "sigma_k=" + LogNumber(expected.singular_values.back())}))
        << "expected " << expected.spectral_steps << " steps, sigma_1 " << LogNumber(expected.singular_values.front())
        << "\n"
        << log;
  }
  bool agreed = false;
  const std::string summary = emulator::KcagcFleetSummary(r.devices, &agreed);
  EXPECT_TRUE(agreed) << summary;
}

INSTANTIATE_TEST_SUITE_P(
    PlantedPartition, KcagcJobOverTls,
    ::testing::Values(Case{"basic_L2", "basic", 2}, Case{"basic_L4", "basic", 4}, Case{"kcagc_L2", "kcagc", 2},
                      Case{"kcagc_L4", "kcagc", 4}, Case{"kcagc_L4_paper_local", "kcagc", 4, "local", "paper"},
                      Case{"tree_L4", "tree", 4}, Case{"joint_L2", "joint", 2}, Case{"joint_L4", "joint", 4}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// The job failed, its reason names device 1, nothing was written, and the
// other participants were told and got no clustering.
void ExpectFailedOverDevice1(JobRun& r, const std::string& log) {
  EXPECT_EQ(r.exit, std::optional<int>(1)) << log;
  EXPECT_TRUE(LogHasLine(log, "kcagc_summary", {"succeeded=false"})) << log;
  const size_t failed = log.find("event=kcagc_failed");
  ASSERT_NE(failed, std::string::npos) << log;
  // An aborted aggregation that got nothing from device 1, or device 1 unreachable.
  const std::string reason = log.substr(failed, log.find('\n', failed) - failed);
  EXPECT_TRUE(reason.find("from: 1") != std::string::npos || reason.find("(device 1)") != std::string::npos)
      << reason;
  std::printf("%s\n", reason.c_str());
  EXPECT_FALSE(fs::exists(r.out / "kcagc-assignment.tsv"));
  for (const auto& d : r.devices) {
    if (d->id() == 1) continue;
    ASSERT_NE(d->kcagc_role(), nullptr);
    EXPECT_FALSE(d->kcagc_role()->clustered()) << "device " << d->id();
    EXPECT_FALSE(d->kcagc_role()->failure().ok()) << "device " << d->id();
  }
}

TEST(KcagcJobOverTlsFailure, AParticipantThatDisconnectsEndsTheJobClearly) {
  const Case c{"kcagc_L3_drop", "kcagc", 3};
  JobRun r;
  const auto start = std::chrono::steady_clock::now();
  // Device 1 leaves after its third contribution; each aggregation step
  // waits at most 3 s for it.
  RunJob(r, c, 3, 3000);
  if (HasFatalFailure()) return;
  const std::string log = r.server->LogText();
  EXPECT_TRUE(LogHasLine(log, "kcagc_failed", {})) << log;
  ExpectFailedOverDevice1(r, log);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(KcagcJobOverTlsFailure, AParticipantThatHangsConnectedEndsTheJobAtTheStepDeadline) {
  // Device 1 stays connected but goes silent after its second contribution:
  // no disconnect tells the server, only the aggregation step's deadline.
  const Case c{"kcagc_L3_hang", "kcagc", 3};
  JobRun r;
  const auto start = std::chrono::steady_clock::now();
  RunJob(r, c, 2, 3000, 0, /*freeze=*/true, /*report_deadline_ms=*/4000);
  if (HasFatalFailure()) return;
  const std::string log = r.server->LogText();
  ExpectFailedOverDevice1(r, log);
  // Ended by the 3 s step deadline and the 4 s report round, not by the
  // 50 s cap of RunJob.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << log;
}

TEST(KcagcJobOverTlsFailure, AParticipantThatRefusesEndsTheJobClearly) {
  // Two participants whose columns were cut for three: they refuse the
  // job's parameters (L = 2) rather than cluster the wrong slices.
  const Case c{"kcagc_L2_cut_for_3", "kcagc", 2};
  JobRun r;
  RunJob(r, c, 0, 3000, 3);
  if (HasFatalFailure()) return;
  const std::string log = r.server->LogText();
  EXPECT_EQ(r.exit, std::optional<int>(1)) << log;
  const size_t failed = log.find("event=kcagc_failed");
  ASSERT_NE(failed, std::string::npos) << log;
  const std::string reason = log.substr(failed, log.find('\n', failed) - failed);
  EXPECT_NE(reason.find("refused the job's parameters"), std::string::npos) << reason;
  EXPECT_NE(reason.find("INVALID_ARGUMENT"), std::string::npos) << reason;
  EXPECT_TRUE(LogHasLine(log, "kcagc_summary", {"succeeded=false", "aggregations=0"})) << log;
}

}  // namespace
}  // namespace nodefl::transport_test
