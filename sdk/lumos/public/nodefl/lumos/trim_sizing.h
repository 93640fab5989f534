// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the trimming role (trim_role.h) from an Arena
// (core/storage_plan.h): one TrimPeer per neighbour, nothing else.
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/lumos/trim_role.h"

namespace nodefl::lumos {

struct TrimSizing {
  uint32_t neighbours = 0;
};

// The peers hold keys and wipe them when destroyed: keep this alive as
// long as the role, and construct the role with `peers.span()` after
// filling in the ids.
struct TrimArenaStorage {
  ArenaObjects<TrimPeer> peers;
};

Result<StoragePlan> Plan(const TrimSizing& sizing);
// kResourceExhausted (arena untouched) when the arena cannot hold the plan.
Result<TrimArenaStorage> Carve(Arena& arena, const TrimSizing& sizing);

}  // namespace nodefl::lumos
