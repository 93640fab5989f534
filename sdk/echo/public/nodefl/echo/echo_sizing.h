// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the neighbour-echo role (neighbour_echo.h) from an Arena
// (core/storage_plan.h): one EchoPeer (about 224 bytes) per neighbour.
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/echo/neighbour_echo.h"

namespace nodefl::echo {

struct EchoSizing {
  uint32_t neighbours = 0;  // the neighbours the device gives the role
};

// The peers hold keys and wipe them when destroyed: keep this alive as
// long as the role, and construct the role with `peers.span()` after
// filling in the ids.
struct EchoArenaStorage {
  ArenaObjects<EchoPeer> peers;
};

Result<StoragePlan> Plan(const EchoSizing& sizing);
// kResourceExhausted (arena untouched) when the arena cannot hold the plan.
Result<EchoArenaStorage> Carve(Arena& arena, const EchoSizing& sizing);

}  // namespace nodefl::echo
