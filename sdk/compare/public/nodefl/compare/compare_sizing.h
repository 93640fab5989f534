// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the secure-comparison role (compare_role.h) from an Arena
// (core/storage_plan.h).
#pragma once

#include <cstdint>

#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/comparison_plan.h"
#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"

namespace nodefl::compare {

struct CompareSizing {
  // The neighbours the device gives the role (one ComparePeer each).
  uint32_t neighbours = 0;
  // Comparison sessions at once (one CompareContext each, about 13 KiB
  // with its OT state) and comparisons per session.
  uint32_t contexts = 4;
  uint32_t slots_per_context = 16;
  // The widest comparison plan the device has table room for as party A:
  // PlanComparison(width, digit_bits).table_bytes() per comparison. The
  // defaults are the widest the contract allows (32-bit inputs in 8-bit
  // digits: 256 bytes); a job needing more than the room is refused.
  uint32_t width = kMaxWidth;
  uint32_t digit_bits = kMaxDigitBits;
};

// Peers hold keys and contexts hold OT state that must be released: keep
// this alive as long as the role, construct the role with `peers.span()`
// (after filling in the ids) and `contexts.span()` (already bound to their
// slots and tables).
struct CompareArenaStorage {
  ArenaObjects<ComparePeer> peers;
  ArenaObjects<CompareContext> contexts;
};

// kInvalidArgument for a width or digit size PlanComparison refuses.
Result<StoragePlan> Plan(const CompareSizing& sizing);
// kResourceExhausted (arena untouched) when the arena cannot hold the plan.
Result<CompareArenaStorage> Carve(Arena& arena, const CompareSizing& sizing);

}  // namespace nodefl::compare
