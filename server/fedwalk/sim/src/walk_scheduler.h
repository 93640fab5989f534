// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Carries every walk from device to device, one step at a time
// (device_step.h), until it ends.
//
// Schedule. Walks advance in waves: in each wave every unfinished walk
// takes one step at the device holding it, and a device serves the walks
// it holds in walk order, drawing from its own DRBG. Devices are
// independent within a wave, so workers take them in parallel; the draws
// each device makes do not depend on the worker count, and neither does
// the corpus. Over TLS a device serves walks in arrival order instead;
// any order gives walks with the same law.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "device_step.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "walk_devices.h"

namespace nodefl::server::fedwalk::walk_sim {

struct WalkRunOptions {
  uint32_t walk_length = 40;
  bool oracle_predictor = false;  // WalkSimulationOptions::oracle_predictor
  uint64_t seed = 1;
  unsigned threads = 1;
};

struct WalkRun {
  // Walk i's entries, as RunWalkStep wrote them (little-endian u32), at
  // ids[i * 4l ..); headers[i].count of them are valid.
  std::vector<uint8_t> ids;
  std::vector<nodefl::fedwalk::WalkHeader> headers;  // as each walk ended (count, hops)
  std::vector<nodefl::fedwalk::WalkOutcome> outcomes;
  StepCounters counters;
};

// Runs walk i from device starts[i] until it ends, for every i. Empty on
// success, else the first error. `entries_done` (may be null) counts the
// entries appended (γ n l when every walk completes).
std::string RunWalks(const SimulatedDevices& devices, const std::vector<std::vector<uint32_t>>& graph,
                     const std::vector<uint32_t>& starts, const WalkRunOptions& options, WalkRun* out,
                     std::atomic<uint64_t>* entries_done);

}  // namespace nodefl::server::fedwalk::walk_sim
