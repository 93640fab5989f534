// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/walk_sizing.h"

#include <utility>

namespace nodefl::fedwalk {
namespace {

struct Counts {
  size_t slot_memory;
  size_t scratch;
  size_t tree_parent;
};

Status CountsOf(const WalkSizing& s, Counts* out) {
  const size_t slot_bytes = WalkSlotBytes(s.walk_length);
  if (s.slots() > SIZE_MAX / slot_bytes) return Status::ResourceExhausted();
  out->slot_memory = s.slots() * slot_bytes;
  out->scratch = slot_bytes;
  out->tree_parent = TreeIndex::NodeCount(s.vertex_count);
  return Status::Ok();
}

}  // namespace

uint32_t WalkSizing::slots() const {
  const uint64_t wanted = uint64_t{base_slots} + neighbours / 4;
  return wanted > kMaxPendingWalks ? kMaxPendingWalks : static_cast<uint32_t>(wanted);
}

Result<StoragePlan> Plan(const WalkSizing& sizing) {
  Counts c{};
  NODEFL_TRY(CountsOf(sizing, &c));
  StoragePlan plan;
  NODEFL_TRY(plan.Add<roles::KeyedPeer>(sizing.neighbours));
  NODEFL_TRY(plan.Add<roles::KeyedPeer>(sizing.peer_cache));
  NODEFL_TRY(plan.Add<WalkSlot>(sizing.slots()));
  NODEFL_TRY(plan.Add<uint8_t>(c.slot_memory));
  NODEFL_TRY(plan.Add<uint8_t>(c.scratch));
  NODEFL_TRY(plan.Add<uint32_t>(c.tree_parent));
  NODEFL_TRY(plan.Add<uint32_t>(sizing.vertex_count));  // leaf of each vertex
  NODEFL_TRY(plan.Add<uint32_t>(sizing.vertex_count));  // predictor pool
  return plan;
}

Result<WalkArenaStorage> Carve(Arena& arena, const WalkSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  Counts c{};
  NODEFL_TRY(CountsOf(sizing, &c));
  ArenaCarve carve(arena, *plan);
  WalkArenaStorage out;  // after `carve`: destroyed first on failure
  WalkStorage& s = out.storage;
  NODEFL_TRY(carve.Construct(out.neighbour_peers, sizing.neighbours));
  NODEFL_TRY(carve.Construct(out.peer_cache, sizing.peer_cache));
  NODEFL_TRY(carve.Take(s.slots, sizing.slots()));
  NODEFL_TRY(carve.Take(s.slot_memory, c.slot_memory));
  NODEFL_TRY(carve.Take(s.scratch, c.scratch));
  NODEFL_TRY(carve.Take(s.tree_parent, c.tree_parent));
  NODEFL_TRY(carve.Take(s.tree_leaf_of_vertex, sizing.vertex_count));
  NODEFL_TRY(carve.Take(s.pool, sizing.vertex_count));
  NODEFL_TRY(carve.Finish());
  s.neighbour_peers = out.neighbour_peers.span();
  s.peer_cache = out.peer_cache.span();
  return Result<WalkArenaStorage>(std::move(out));
}

}  // namespace nodefl::fedwalk
