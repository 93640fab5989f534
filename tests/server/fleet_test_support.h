// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A whole job over TLS for the host integration tests: a deployment for one
// dataset, the server under test running the job, one EmulatedDevice per
// node, driven until the server has exited and every device has finished or
// failed. The job's own settings (server options, what the devices run) come
// from the test; what is the same for every job lives here, once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/emulator/emulated_device.h"
#include "nodefl/emulator/fault_plan.h"
#include "nodefl/emulator/shared_pair_keys.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {

// Everything a fleet run owns; the tests read the graph, the server's log
// and outputs, the stats and the devices afterwards.
struct EmulatedFleet {
  dataset::Graph graph;
  std::unique_ptr<TestDeployment> deployment;
  std::unique_ptr<ServerUnderTest> server;
  tls::TlsCredentials ca;
  emulator::FleetStats stats;
  std::unique_ptr<emulator::ConnectGate> gate;
  // For jobs whose devices derive pair keys (secure compare): one memo for
  // the fleet, set in FleetSetup by the test.
  emulator::SharedPairKeys shared_keys;
  emulator::FleetSetup fleet;
  emulator::FaultPlan faults;  // FleetPlan::faults, which fleet.faults points to
  // Declared before the devices: their strands belong to it, so it must be
  // destroyed after them.
  asio::io_context io;
  std::vector<std::shared_ptr<emulator::EmulatedDevice>> devices;
  std::filesystem::path out;  // the server's output_dir
};

struct FleetPlan {
  std::string dataset;  // a folder of NODEFL_DATASETS_DIR, one device per node
  // 0: every node; N: only nodes 0..N-1 and the edges among them (as
  // nodefl-emulate --devices N).
  uint32_t max_nodes = 0;
  uint64_t pki_seed = 1;
  // The job's server settings, applied after the common ones (job quorum =
  // every node, exit after one job, output_dir = EmulatedFleet::out).
  std::function<void(server::ServerConfig&)> configure_server;
  // What the devices run, applied after the common settings (server, CA,
  // stats, gate, 5 connect attempts, vertex count); sees the final config.
  std::function<void(emulator::FleetSetup&, const server::ServerConfig&)> configure_devices;
  size_t concurrent_connects = 16;  // the ConnectGate's width
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds exit_wait{1000};  // for the server's exit status
  // 1: the job is meant to end unsuccessful; nullopt: either, as long as
  // the server exits (the test checks the job's own summary).
  std::optional<int> expected_exit = 0;
  // A second thread also runs the devices (each on its own strand), for jobs
  // whose device work is most of the test's time.
  bool second_io_thread = false;
  // Failures to inject into the fleet (emulator/fault_plan.h); none by default.
  emulator::FaultPlan faults;
};

// Runs the plan on `f`; fails the test (fatally) if the dataset, deployment,
// config or a device cannot be set up, or the run does not end in time; the
// server must then exit with status 0. Callers check HasFatalFailure().
void RunEmulatedFleet(EmulatedFleet& f, const FleetPlan& plan);

}  // namespace nodefl::transport_test
