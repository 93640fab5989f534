// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing strict FedWalk's cluster-histogram role (histogram_role.h) from an
// Arena (core/storage_plan.h).
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/fedwalk/histogram_role.h"

namespace nodefl::fedwalk {

struct HistogramSizing {
  // The neighbours the device gives the role (8 bytes each).
  uint32_t neighbours = 0;
  // The most clusters a job may have for this device to take part (4 bytes
  // a cell). The job's C is at most its vertex count and at most
  // kMaxClusters, so Plan clamps to 1..kMaxClusters: pass the vertex count.
  uint32_t max_clusters = 0;

  uint32_t cells() const;
};

Result<StoragePlan> Plan(const HistogramSizing& sizing);
// The storage FedWalkHistogramRole is constructed with; the caller fills
// in neighbours[i].id. kResourceExhausted (arena untouched) when the arena
// cannot hold the plan.
Result<HistogramStorage> Carve(Arena& arena, const HistogramSizing& sizing);

}  // namespace nodefl::fedwalk
