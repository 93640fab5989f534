// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/compare_sizing.h"

#include <utility>

namespace nodefl::compare {
namespace {

struct Counts {
  size_t slots;        // per context
  size_t table_bytes;  // per context
};

Status CountsOf(const CompareSizing& s, Counts* out) {
  Result<ComparisonPlan> widest = PlanComparison(s.width, s.digit_bits);
  if (!widest.ok()) return widest.status();
  out->slots = s.slots_per_context;
  if (out->slots > SIZE_MAX / widest->table_bytes()) return Status::ResourceExhausted();
  out->table_bytes = out->slots * widest->table_bytes();
  return Status::Ok();
}

}  // namespace

Result<StoragePlan> Plan(const CompareSizing& sizing) {
  Counts c{};
  NODEFL_TRY(CountsOf(sizing, &c));
  StoragePlan plan;
  NODEFL_TRY(plan.Add<ComparePeer>(sizing.neighbours));
  NODEFL_TRY(plan.Add<CompareContext>(sizing.contexts));
  for (uint32_t i = 0; i < sizing.contexts; ++i) {
    NODEFL_TRY(plan.Add<ComparisonSlot>(c.slots));
    NODEFL_TRY(plan.Add<uint8_t>(c.table_bytes));
  }
  return plan;
}

Result<CompareArenaStorage> Carve(Arena& arena, const CompareSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  Counts c{};
  NODEFL_TRY(CountsOf(sizing, &c));
  ArenaCarve carve(arena, *plan);
  CompareArenaStorage out;  // after `carve`: destroyed first on failure
  NODEFL_TRY(carve.Construct(out.peers, sizing.neighbours));
  NODEFL_TRY(carve.Construct(out.contexts, sizing.contexts));
  for (uint32_t i = 0; i < sizing.contexts; ++i) {
    Span<ComparisonSlot> slots;
    ByteSpan tables;
    NODEFL_TRY(carve.Take(slots, c.slots));
    NODEFL_TRY(carve.Take(tables, c.table_bytes));
    out.contexts[i].Bind(slots, tables);
  }
  NODEFL_TRY(carve.Finish());
  return Result<CompareArenaStorage>(std::move(out));
}

}  // namespace nodefl::compare
