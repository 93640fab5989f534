// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every device's state after the HCT job, as the walk role sees it: the
// neighbour records and codebook rows are filled by the SDK's own streaming
// filters, each fed the whole artefact in one piece exactly as the HCT role
// does in rounds 1-3 (BinPlanFilter, DictionaryFilter, CodebookStream with
// the device's own id), into a pool sized like a device's (HctSizing).
// From them the WalkStepContext is assembled as FedWalkWalkRole::Init does
// (CountWalkNeighbours, TreeIndex, CountLeavesPerBin).
//
// One thing is shared instead of copied per device: the tree (kept by
// TreeStream), its TreeIndex, the whole bin plan and the bin sizes. They
// are public artefacts every device keeps byte for byte and indexes with
// the same deterministic code, so one copy is the same state as n copies
// (n copies of BlogCatalog's tree and index would take 2.6 GB).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/fedwalk/walk_step.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk::walk_sim {

// The HCT job's published artefacts, in their wire layouts (hct_format.h).
struct HctArtefacts {
  uint32_t vertex_count = 0;
  uint32_t bins = 0;
  std::vector<uint8_t> bin_plan;    // kBinPlan
  std::vector<uint8_t> dictionary;  // kDictionary
  std::vector<uint8_t> tree;        // kTree
  std::vector<uint8_t> codebook;    // kCodebook
};

struct DevicePoolSizing {
  uint32_t entries_per_neighbour = 8;  // 0: room for every row
  uint32_t spare_entries = 1024;
};

class SimulatedDevices {
 public:
  SimulatedDevices() = default;
  // The contexts point into this object.
  SimulatedDevices(const SimulatedDevices&) = delete;
  SimulatedDevices& operator=(const SimulatedDevices&) = delete;

  // Empty on success, else what went wrong (an artefact a device would
  // reject). `done` (may be null) counts devices built.
  std::string Build(const std::vector<std::vector<uint32_t>>& neighbours, const HctArtefacts& artefacts,
                    DevicePoolSizing sizing, double p, nodefl::fedwalk::JumpPredictor predictor, unsigned threads,
                    std::atomic<uint64_t>* done);

  const nodefl::fedwalk::WalkStepContext& context(uint32_t v) const { return contexts_[v]; }
  uint32_t vertex_count() const { return static_cast<uint32_t>(contexts_.size()); }

  uint64_t rows_not_kept() const { return rows_not_kept_; }
  uint64_t devices_without_own_row() const { return devices_without_own_row_; }
  uint64_t devices_without_walk_neighbours() const { return devices_without_walk_neighbours_; }

 private:
  std::string BuildShared(const HctArtefacts& artefacts);

  // The shared public state.
  std::vector<uint8_t> tree_;
  std::vector<uint8_t> bin_plan_;
  std::vector<uint32_t> tree_parent_;
  std::vector<uint32_t> leaf_of_vertex_;
  nodefl::fedwalk::TreeIndex tree_index_;
  std::vector<uint32_t> bin_sizes_;
  // Per device: records[offsets[v] ..) and pools[pool_offsets[v] ..).
  std::vector<nodefl::fedwalk::HctNeighbour> records_;
  std::vector<nodefl::fedwalk::CodebookEntry> pools_;
  std::vector<nodefl::fedwalk::WalkStepContext> contexts_;
  uint64_t rows_not_kept_ = 0;
  uint64_t devices_without_own_row_ = 0;
  uint64_t devices_without_walk_neighbours_ = 0;
};

}  // namespace nodefl::server::fedwalk::walk_sim
