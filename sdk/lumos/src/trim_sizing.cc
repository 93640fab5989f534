// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/trim_sizing.h"

#include <utility>

namespace nodefl::lumos {

Result<StoragePlan> Plan(const TrimSizing& sizing) {
  StoragePlan plan;
  NODEFL_TRY(plan.Add<TrimPeer>(sizing.neighbours));
  return plan;
}

Result<TrimArenaStorage> Carve(Arena& arena, const TrimSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  ArenaCarve carve(arena, *plan);
  TrimArenaStorage storage;  // after `carve`: destroyed first on failure
  NODEFL_TRY(carve.Construct(storage.peers, sizing.neighbours));
  NODEFL_TRY(carve.Finish());
  return Result<TrimArenaStorage>(std::move(storage));
}

}  // namespace nodefl::lumos
