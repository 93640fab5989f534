// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/mcmc_sizing.h"

#include <utility>

namespace nodefl::lumos {
namespace {

// Every session holds one comparison (mcmc_format.h).
Result<size_t> TableBytes(const McmcSizing& s) {
  Result<compare::ComparisonPlan> widest = compare::PlanComparison(s.width, s.digit_bits);
  if (!widest.ok()) return widest.status();
  return widest->table_bytes();
}

}  // namespace

Result<StoragePlan> Plan(const McmcSizing& sizing) {
  Result<size_t> table_bytes = TableBytes(sizing);
  if (!table_bytes.ok()) return table_bytes.status();
  StoragePlan plan;
  NODEFL_TRY(plan.Add<McmcPeer>(sizing.neighbours));
  NODEFL_TRY(plan.Add<roles::KeyedPeer>(sizing.neighbours));
  NODEFL_TRY(plan.Add<roles::KeyedPeer>(sizing.peer_cache));
  NODEFL_TRY(plan.Add<McmcContext>(sizing.contexts));
  for (uint32_t i = 0; i < sizing.contexts; ++i) {
    NODEFL_TRY(plan.Add<compare::ComparisonSlot>(1));
    NODEFL_TRY(plan.Add<uint8_t>(*table_bytes));
  }
  return plan;
}

Result<McmcArenaStorage> Carve(Arena& arena, const McmcSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  Result<size_t> table_bytes = TableBytes(sizing);
  if (!table_bytes.ok()) return table_bytes.status();
  ArenaCarve carve(arena, *plan);
  McmcArenaStorage out;  // after `carve`: destroyed first on failure
  NODEFL_TRY(carve.Construct(out.peers, sizing.neighbours));
  NODEFL_TRY(carve.Construct(out.neighbour_keys, sizing.neighbours));
  NODEFL_TRY(carve.Construct(out.cache, sizing.peer_cache));
  NODEFL_TRY(carve.Construct(out.contexts, sizing.contexts));
  for (uint32_t i = 0; i < sizing.contexts; ++i) {
    Span<compare::ComparisonSlot> slots;
    ByteSpan tables;
    NODEFL_TRY(carve.Take(slots, 1));
    NODEFL_TRY(carve.Take(tables, *table_bytes));
    out.contexts[i].Bind(slots, tables);
  }
  NODEFL_TRY(carve.Finish());
  return Result<McmcArenaStorage>(std::move(out));
}

}  // namespace nodefl::lumos
