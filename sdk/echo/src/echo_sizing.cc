// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/echo/echo_sizing.h"

#include <utility>

namespace nodefl::echo {

Result<StoragePlan> Plan(const EchoSizing& sizing) {
  StoragePlan plan;
  NODEFL_TRY(plan.Add<EchoPeer>(sizing.neighbours));
  return plan;
}

Result<EchoArenaStorage> Carve(Arena& arena, const EchoSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  ArenaCarve carve(arena, *plan);
  EchoArenaStorage storage;  // after `carve`: destroyed first on failure
  NODEFL_TRY(carve.Construct(storage.peers, sizing.neighbours));
  NODEFL_TRY(carve.Finish());
  return Result<EchoArenaStorage>(std::move(storage));
}

}  // namespace nodefl::echo
