// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/hct_sizing.h"

namespace nodefl::fedwalk {
namespace {

// Counts as size_t, or kResourceExhausted where they do not fit (32-bit
// targets).
Status Counts(const HctSizing& s, size_t* codebook, size_t* tree, size_t* bin_plan) {
  const uint64_t tree_bytes = s.kept_vertex_count == 0 ? 0 : TreeArtefactBytes(s.kept_vertex_count);
  if (s.codebook_entries() > SIZE_MAX || tree_bytes > SIZE_MAX) return Status::ResourceExhausted();
  *codebook = static_cast<size_t>(s.codebook_entries());
  *tree = static_cast<size_t>(tree_bytes);
  *bin_plan = s.kept_vertex_count;
  return Status::Ok();
}

}  // namespace

Result<StoragePlan> Plan(const HctSizing& sizing) {
  size_t codebook = 0, tree = 0, bin_plan = 0;
  NODEFL_TRY(Counts(sizing, &codebook, &tree, &bin_plan));
  StoragePlan plan;
  NODEFL_TRY(plan.Add<HctNeighbour>(sizing.neighbours));
  NODEFL_TRY(plan.Add<CodebookEntry>(codebook));
  NODEFL_TRY(plan.Add<uint8_t>(tree));
  NODEFL_TRY(plan.Add<uint8_t>(bin_plan));
  return plan;
}

Result<HctStorage> Carve(Arena& arena, const HctSizing& sizing) {
  Result<StoragePlan> plan = Plan(sizing);
  if (!plan.ok()) return plan.status();
  size_t codebook = 0, tree = 0, bin_plan = 0;
  NODEFL_TRY(Counts(sizing, &codebook, &tree, &bin_plan));
  ArenaCarve carve(arena, *plan);
  HctStorage storage;
  NODEFL_TRY(carve.Take(storage.neighbours, sizing.neighbours));
  NODEFL_TRY(carve.Take(storage.codebook_pool, codebook));
  NODEFL_TRY(carve.Take(storage.tree, tree));
  NODEFL_TRY(carve.Take(storage.bin_plan, bin_plan));
  NODEFL_TRY(carve.Finish());
  return storage;
}

}  // namespace nodefl::fedwalk
