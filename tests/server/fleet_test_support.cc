// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "fleet_test_support.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>

#include <numeric>
#include <optional>
#include <thread>

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Nodes 0..n-1 of `g` and the edges among them, labels and features kept.
dataset::Graph Prefix(const dataset::Graph& g, uint32_t n) {
  dataset::Graph p;
  p.name = g.name;
  p.num_nodes = n;
  p.offsets.push_back(0);
  uint64_t ends = 0;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (g.neighbours[i] < n) {
        p.neighbours.push_back(g.neighbours[i]);
        ++ends;
      }
    }
    p.offsets.push_back(p.neighbours.size());
  }
  p.num_edges = ends / 2;
  const auto cut = [n](const std::vector<uint64_t>& offsets, const std::vector<uint32_t>& items,
                       std::vector<uint64_t>* out_offsets, std::vector<uint32_t>* out_items) {
    if (offsets.size() <= n) return;
    out_offsets->assign(offsets.begin(), offsets.begin() + n + 1);
    out_items->assign(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(offsets[n]));
  };
  cut(g.label_offsets, g.labels, &p.label_offsets, &p.labels);
  cut(g.feature_offsets, g.features, &p.feature_offsets, &p.features);
  p.num_label_classes = g.num_label_classes;
  p.num_feature_dims = g.num_feature_dims;
  return p;
}

void StartServer(EmulatedFleet& f, const FleetPlan& plan, server::ServerConfig* config) {
  const dataset::LoadResult loaded = dataset::LoadGraph(fs::path(NODEFL_DATASETS_DIR) / plan.dataset);
  ASSERT_TRUE(loaded.ok) << "the " << plan.dataset << " dataset is required: " << loaded.error;
  f.graph = plan.max_nodes == 0 || plan.max_nodes >= loaded.graph.num_nodes ? loaded.graph
                                                                             : Prefix(loaded.graph, plan.max_nodes);
  std::vector<uint32_t> ids(f.graph.num_nodes);
  std::iota(ids.begin(), ids.end(), 0u);
  f.deployment = std::make_unique<TestDeployment>(ids, plan.pki_seed);
  ASSERT_TRUE(f.deployment->ok()) << f.deployment->error();
  f.out = f.deployment->dir() / "out";
  *config = f.deployment->BaseConfig();
  config->job_quorum = f.graph.num_nodes;
  config->exit_after_jobs = 1;
  config->output_dir = f.out.string();
  if (plan.configure_server) plan.configure_server(*config);
  const server::ConfigStatus valid = server::ValidateConfig(*config);
  ASSERT_TRUE(valid.ok) << valid.message;
  f.server = std::make_unique<ServerUnderTest>(*config, f.deployment->dir() / "server.log");
  ASSERT_TRUE(f.server->ok()) << f.server->error();
}

void StartDevices(EmulatedFleet& f, const FleetPlan& plan, const server::ServerConfig& config) {
  const dataset::Graph& g = f.graph;
  ASSERT_TRUE(f.ca.LoadCaChain(ConstByteSpan(f.deployment->pki().ca_der())).ok());
  f.gate = std::make_unique<emulator::ConnectGate>(plan.concurrent_connects);
  f.fleet.server = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.server->port());
  f.fleet.server_name = "localhost";
  f.fleet.ca = &f.ca;
  f.fleet.stats = &f.stats;
  f.fleet.gate = f.gate.get();
  f.fleet.max_connect_attempts = 5;
  f.fleet.vertex_count = g.num_nodes;
  if (plan.configure_devices) plan.configure_devices(f.fleet, config);
  f.faults = plan.faults;
  if (f.faults.any()) f.fleet.faults = &f.faults;
  const std::vector<emulator::DeviceFaults> faults = emulator::AssignFaults(f.faults, g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    emulator::DeviceSetup setup;
    setup.id = v;
    setup.faults = faults[v];
    setup.neighbours.assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                            g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
    setup.certificate_der = f.deployment->device(v).certificate_der;
    setup.private_key_der = f.deployment->device(v).private_key_der;
    auto device = std::make_shared<emulator::EmulatedDevice>(f.io, f.fleet, std::move(setup));
    ASSERT_TRUE(device->Init().ok()) << "device " << v;
    f.devices.push_back(std::move(device));
  }
  for (auto& d : f.devices) d->Start();
}

// Until the server has exited and every device finished or failed.
void RunUntilDone(EmulatedFleet& f, const FleetPlan& plan) {
  ServerUnderTest& server = *f.server;
  const auto done = [&] { return !server.running() && f.stats.finished + f.stats.failed >= f.graph.num_nodes; };
  bool ended = false;
  if (plan.second_io_thread) {
    auto work = asio::make_work_guard(f.io);
    std::thread second([&f] { f.io.run(); });
    ended = RunUntil(f.io, done, plan.timeout);
    work.reset();
    f.io.stop();
    second.join();
  } else {
    ended = RunUntil(f.io, done, plan.timeout);
  }
  for (auto& d : f.devices) d->Stop();
  f.io.restart();
  f.io.run_for(milliseconds(500));
  ASSERT_TRUE(ended) << "finished " << f.stats.finished << ", failed " << f.stats.failed << "\n" << server.LogText();
  const std::optional<int> exit = server.WaitForExit(plan.exit_wait);
  if (plan.expected_exit) {
    EXPECT_EQ(exit, plan.expected_exit) << server.LogText();
  } else {
    EXPECT_TRUE(exit.has_value()) << "the server did not exit\n" << server.LogText();
  }
}

}  // namespace

void RunEmulatedFleet(EmulatedFleet& f, const FleetPlan& plan) {
  server::ServerConfig config;
  StartServer(f, plan, &config);
  if (::testing::Test::HasFatalFailure()) return;
  StartDevices(f, plan, config);
  if (::testing::Test::HasFatalFailure()) return;
  RunUntilDone(f, plan);
}

}  // namespace nodefl::transport_test
