// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/histogram_sizing.h"

namespace nodefl::fedwalk {

uint32_t HistogramSizing::cells() const {
  if (max_clusters == 0) return 1;
  return max_clusters > kMaxClusters ? kMaxClusters : max_clusters;
}

Result<StoragePlan> Plan(const HistogramSizing& sizing) {
  StoragePlan plan;
  NODEFL_TRY(plan.Add<HistogramNeighbour>(sizing.neighbours));
  NODEFL_TRY(plan.Add<int32_t>(sizing.cells()));
  return plan;
}

Result<HistogramStorage> Carve(Arena& arena, const HistogramSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  ArenaCarve carve(arena, *plan);
  HistogramStorage storage;
  NODEFL_TRY(carve.Take(storage.neighbours, sizing.neighbours));
  NODEFL_TRY(carve.Take(storage.cells, sizing.cells()));
  NODEFL_TRY(carve.Finish());
  return storage;
}

}  // namespace nodefl::fedwalk
