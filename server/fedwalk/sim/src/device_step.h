// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One step of one walk at one device: the SDK's RunWalkStep, exactly as
// FedWalkWalkRole::Step calls it (the device's context, its DRBG, a pool
// of vertex_count entries as WalkSizing gives), minus the sealing.
//
// What the step did. RunWalkStep reports the destination but not which
// neighbour u it encoded before a 2-hop jump, nor whether an encoding
// substituted its vertex. A replica DRBG per device, seeded like the
// device's, redraws the step in walk_step.h's documented draw order (own
// Enc, neighbour index, Enc(u), predictor coin, pool index) and must agree
// with every entry and the destination RunWalkStep produced; a
// disagreement (walk_step.h changed its draws) stops the simulation rather
// than mislabel a step.
//
// Each device has its own DRBG, SeedDeterministic(seed, 2^32 + v) (the HCT
// simulation's noise uses the streams below 2^32).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph_distance.h"
#include "nodefl/core/span.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/server/fedwalk/sim/walk_simulation.h"
#include "walk_devices.h"

namespace nodefl::server::fedwalk::walk_sim {

struct StepCounters {
  uint64_t neighbour_hops = 0;
  uint64_t predicted_hops = 0;
  uint64_t empty_pool_hops = 0;
  uint64_t pool_entries = 0;
  uint64_t neighbour_encodings = 0;
  uint64_t neighbour_substitutions = 0;
  uint64_t self_encodings = 0;
  uint64_t self_substitutions = 0;
  DistanceCounts jump_vs_previous;
  DistanceCounts jump_vs_skipped;
  StepCounters& operator+=(const StepCounters& o);
};

// What a worker brings to a step: scratch and its own counters.
struct StepScratch {
  std::vector<uint32_t> pool;  // the predictor's pool, vertex_count entries
  StepCounters counters;
};

struct StepResult {
  bool finished = false;  // the walk went to the server with `outcome`
  nodefl::fedwalk::WalkOutcome outcome = nodefl::fedwalk::WalkOutcome::kComplete;
  uint32_t next = 0;  // else the device it was forwarded to
};

class DeviceSteps {
 public:
  // `oracle_predictor`: WalkSimulationOptions::oracle_predictor. The
  // devices and the graph must outlive this object.
  DeviceSteps(const SimulatedDevices& devices, const std::vector<std::vector<uint32_t>>& graph, uint64_t seed,
              bool oracle_predictor);

  // Empty on success.
  std::string Seed();

  // Device w takes one step of `walk`, whose entries are in `ids` (the
  // walk's l entries of room). A device's steps must not run concurrently.
  // false and *error on a step RunWalkStep refused or the replica
  // disagreeing.
  bool Step(uint32_t w, nodefl::fedwalk::WalkHeader* walk, ByteSpan ids, StepScratch* scratch, StepResult* result,
            std::string* error);

 private:
  const SimulatedDevices& devices_;
  const std::vector<std::vector<uint32_t>>& graph_;
  const GraphDistance distance_;
  const uint64_t seed_;
  const bool oracle_predictor_;
  std::unique_ptr<Drbg[]> rng_;      // the devices' DRBGs
  std::unique_ptr<Drbg[]> replica_;  // their replicas
};

}  // namespace nodefl::server::fedwalk::walk_sim
