// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing the FedWalk walk role (walk_role.h) from an Arena
// (core/storage_plan.h).
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/result.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/fedwalk/walk_role.h"

namespace nodefl::fedwalk {

struct WalkSizing {
  // The neighbours the device gives the role (one roles::KeyedPeer each).
  uint32_t neighbours = 0;
  // Non-neighbours whose keys it caches for 2-hop jumps (one roles::KeyedPeer each;
  // 0: no 2-hop jumps to or from strangers).
  uint32_t peer_cache = 256;
  // Walks held at once: this plus a quarter of the neighbours, at most
  // kMaxPendingWalks (slots()). A random walk visits a vertex in
  // proportion to its degree, so a hub holds many walks at once.
  uint32_t base_slots = 32;
  // The longest walk the device can hold (WalkSlotBytes(l) per slot).
  uint32_t walk_length = 80;
  // The job's vertex count: the tree index and the 2-hop predictor's pool
  // (12 bytes a vertex). 0: no predictor.
  uint32_t vertex_count = 0;

  uint32_t slots() const;
};

// The peers hold keys and wipe them when destroyed: keep this alive as
// long as the role, and construct the role with `storage`.
struct WalkArenaStorage {
  ArenaObjects<roles::KeyedPeer> neighbour_peers;
  ArenaObjects<roles::KeyedPeer> peer_cache;
  WalkStorage storage;  // spans over the above and the rest of the carve
};

Result<StoragePlan> Plan(const WalkSizing& sizing);
// kResourceExhausted (arena untouched) when the arena cannot hold the plan.
Result<WalkArenaStorage> Carve(Arena& arena, const WalkSizing& sizing);

}  // namespace nodefl::fedwalk
