// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the MCMC role (mcmc_role.h) from an Arena (core/storage_plan.h).
#pragma once

#include <cstdint>

#include "nodefl/compare/comparison_plan.h"
#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/lumos/mcmc_role.h"

namespace nodefl::lumos {

struct McmcSizing {
  uint32_t neighbours = 0;  // one McmcPeer and one KeyedPeer each
  // Non-neighbours keyed at once (Alg. 3's other candidates): a record
  // each, about 200 bytes; the least recently used is evicted.
  uint32_t peer_cache = 16;
  // Sessions at once (one comparison each; about 13 KiB with the OT state).
  uint32_t contexts = 4;
  // The widest comparison the device has table room for (workloads fit in
  // 16 bits for any degree below 65,536).
  uint32_t width = 16;
  uint32_t digit_bits = 0;  // 0: the plan's default
};

// Keep alive as long as the role; fill in the ids of `peers` and
// `neighbour_keys` (the neighbours, ascending) before Init().
struct McmcArenaStorage {
  ArenaObjects<McmcPeer> peers;
  ArenaObjects<roles::KeyedPeer> neighbour_keys;
  ArenaObjects<roles::KeyedPeer> cache;
  ArenaObjects<McmcContext> contexts;  // bound to their slot and tables
};

// kInvalidArgument for a width or digit size PlanComparison refuses.
Result<StoragePlan> Plan(const McmcSizing& sizing);
// kResourceExhausted (arena untouched) when the arena cannot hold the plan.
Result<McmcArenaStorage> Carve(Arena& arena, const McmcSizing& sizing);

}  // namespace nodefl::lumos
