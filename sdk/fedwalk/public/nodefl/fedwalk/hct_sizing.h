// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the FedWalk HCT role (hct_role.h, hct_storage.h) from an Arena
// (core/storage_plan.h).
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/fedwalk/hct_storage.h"

namespace nodefl::fedwalk {

struct HctSizing {
  // The neighbours the device gives the role (96 bytes each).
  uint32_t neighbours = 0;
  // The codebook pool: this many entries per neighbour plus a spare (12
  // bytes an entry). At the paper's epsilon a row holds one to a few
  // entries; (neighbours + 1) x K always suffices (HctStorage).
  uint32_t codebook_entries_per_neighbour = 8;
  uint32_t codebook_spare_entries = 1024;
  // Keep the published tree and the whole bin plan of a job over this many
  // vertices (about 13 bytes a vertex; the walk's 2-hop predictor uses
  // them). 0: keep neither, only verify the tree.
  uint32_t kept_vertex_count = 0;

  uint64_t codebook_entries() const {
    return uint64_t{neighbours} * codebook_entries_per_neighbour + codebook_spare_entries;
  }
};

Result<StoragePlan> Plan(const HctSizing& sizing);
// The storage FedWalkHctRole is constructed with; the caller fills in
// neighbours[i].id. kResourceExhausted (arena untouched) when the arena
// cannot hold the plan.
Result<HctStorage> Carve(Arena& arena, const HctSizing& sizing);

}  // namespace nodefl::fedwalk
