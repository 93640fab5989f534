// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Each role's Plan and Carve (core/storage_plan.h): the carve takes exactly
// the planned bytes, a too-small arena fails cleanly and is left untouched,
// neither allocates, and the role runs on what was carved.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "heap_counter.h"
#include "nodefl/compare/compare_sizing.h"
#include "nodefl/core/arena.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/echo/echo_sizing.h"
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/hct_sizing.h"
#include "nodefl/fedwalk/histogram_role.h"
#include "nodefl/fedwalk/histogram_sizing.h"
#include "nodefl/fedwalk/walk_sizing.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"

namespace nodefl {
namespace {

// Padding from `at` to `alignment`.
size_t PaddingAt(const uint8_t* at, size_t alignment) {
  return (alignment - reinterpret_cast<uintptr_t>(at) % alignment) % alignment;
}

// Carves `sizing` twice: into an arena of ArenaBytes() whose first byte is
// deliberately misaligned (must fit, taking padding + plan.bytes()), and
// into one a byte short of the plan (must fail, untouched). `carve(arena)`
// returns the Status of the role's Carve; the storage it made is dropped
// inside it.
template <typename Sizing, typename CarveFn>
void ExpectCarveMatchesPlan(const Sizing& sizing, CarveFn carve) {
  Result<StoragePlan> plan = Plan(sizing);
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->bytes(), 0u);
  std::vector<uint8_t> buffer(plan->ArenaBytes() + 1);
  uint8_t* first = buffer.data() + 1;  // misaligned for anything wider than a byte
  Arena arena(Span<uint8_t>(first, plan->ArenaBytes()));
  Status carved;
  NODEFL_EXPECT_NO_HEAP({ carved = carve(arena); });
  ASSERT_TRUE(carved.ok()) << carved.str();
  EXPECT_EQ(arena.used(), PaddingAt(first, plan->alignment()) + plan->bytes());

  std::vector<uint8_t> small(plan->bytes() + plan->alignment());
  uint8_t* aligned = small.data() + PaddingAt(small.data(), plan->alignment());
  Arena too_small(Span<uint8_t>(aligned, plan->bytes() - 1));
  NODEFL_EXPECT_NO_HEAP({ carved = carve(too_small); });
  EXPECT_EQ(carved, Status::ResourceExhausted());
  EXPECT_EQ(too_small.used(), 0u);
  Arena exact(Span<uint8_t>(aligned, plan->bytes()));
  NODEFL_EXPECT_NO_HEAP({ carved = carve(exact); });
  EXPECT_TRUE(carved.ok()) << carved.str();
  EXPECT_EQ(exact.used(), plan->bytes());
}

TEST(RoleSizingTest, NeighbourEcho) {
  echo::EchoSizing sizing;
  sizing.neighbours = 37;
  Result<StoragePlan> plan = echo::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes(), 37 * sizeof(echo::EchoPeer));
  ExpectCarveMatchesPlan(sizing, [&](Arena& arena) {
    Result<echo::EchoArenaStorage> storage = echo::Carve(arena, sizing);
    if (storage.ok()) {
      EXPECT_EQ(storage->peers.size(), 37u);
      EXPECT_EQ(storage->peers[36].next_counter, 1u);  // constructed, not raw memory
    }
    return storage.status();
  });
}

TEST(RoleSizingTest, FedWalkHct) {
  fedwalk::HctSizing sizing;
  sizing.neighbours = 5;
  sizing.codebook_entries_per_neighbour = 8;
  sizing.codebook_spare_entries = 100;
  sizing.kept_vertex_count = 1000;
  Result<StoragePlan> plan = fedwalk::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  EXPECT_GE(plan->bytes(), 5 * sizeof(fedwalk::HctNeighbour) + 140 * sizeof(fedwalk::CodebookEntry) +
                               fedwalk::TreeArtefactBytes(1000) + 1000);
  ExpectCarveMatchesPlan(sizing, [&](Arena& arena) {
    Result<fedwalk::HctStorage> storage = fedwalk::Carve(arena, sizing);
    if (storage.ok()) {
      EXPECT_EQ(storage->neighbours.size(), 5u);
      EXPECT_EQ(storage->codebook_pool.size(), 140u);
      EXPECT_EQ(storage->tree.size(), fedwalk::TreeArtefactBytes(1000));
      EXPECT_EQ(storage->bin_plan.size(), 1000u);
    }
    return storage.status();
  });

  // Without a kept tree the plan shrinks to neighbours and codebook, and
  // the role runs on the carve.
  sizing.kept_vertex_count = 0;
  plan = fedwalk::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  std::vector<uint8_t> buffer(plan->ArenaBytes());
  Arena arena(buffer);
  Result<fedwalk::HctStorage> storage = fedwalk::Carve(arena, sizing);
  ASSERT_TRUE(storage.ok());
  EXPECT_TRUE(storage->tree.empty());
  EXPECT_TRUE(storage->bin_plan.empty());
  for (uint32_t i = 0; i < 5; ++i) storage->neighbours[i].id = 10 + i;
  Drbg rng;
  std::vector<LedgerEntry> entries(2);
  PrivacyLedger ledger(entries);
  fedwalk::FedWalkHctRole role(1, *storage, rng, ledger);
  EXPECT_TRUE(role.Init(5).ok());
}

TEST(RoleSizingTest, FedWalkHctCodebookOverflowIsRefused) {
  fedwalk::HctSizing sizing;
  sizing.neighbours = 0xFFFFFFFFu;
  sizing.codebook_entries_per_neighbour = 0xFFFFFFFFu;
  EXPECT_EQ(fedwalk::Plan(sizing).status(), Status::ResourceExhausted());
  uint8_t buffer[64];
  Arena arena(buffer);
  EXPECT_EQ(fedwalk::Carve(arena, sizing).status(), Status::ResourceExhausted());
  EXPECT_EQ(arena.used(), 0u);
}

TEST(RoleSizingTest, FedWalkHistogram) {
  fedwalk::HistogramSizing sizing;
  sizing.neighbours = 9;
  sizing.max_clusters = 70000;  // clamped to what a job can have
  EXPECT_EQ(sizing.cells(), fedwalk::kMaxClusters);
  Result<StoragePlan> plan = fedwalk::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes(), 9 * sizeof(fedwalk::HistogramNeighbour) + 4u * fedwalk::kMaxClusters);
  ExpectCarveMatchesPlan(sizing, [&](Arena& arena) {
    Result<fedwalk::HistogramStorage> storage = fedwalk::Carve(arena, sizing);
    if (storage.ok()) {
      EXPECT_EQ(storage->neighbours.size(), 9u);
      EXPECT_EQ(storage->cells.size(), size_t{fedwalk::kMaxClusters});
    }
    return storage.status();
  });

  sizing.max_clusters = 0;  // no vertex count: still one cell
  EXPECT_EQ(sizing.cells(), 1u);
  plan = fedwalk::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  std::vector<uint8_t> buffer(plan->ArenaBytes());
  Arena arena(buffer);
  Result<fedwalk::HistogramStorage> storage = fedwalk::Carve(arena, sizing);
  ASSERT_TRUE(storage.ok());
  for (uint32_t i = 0; i < 9; ++i) storage->neighbours[i].id = 2 + i;
  Drbg rng;
  std::vector<LedgerEntry> entries(2);
  PrivacyLedger ledger(entries);
  fedwalk::FedWalkHistogramRole role(1, *storage, rng, ledger);
  EXPECT_TRUE(role.Init().ok());
}

TEST(RoleSizingTest, FedWalkWalk) {
  fedwalk::WalkSizing sizing;
  sizing.neighbours = 40;
  sizing.peer_cache = 16;
  sizing.base_slots = 32;
  sizing.walk_length = 40;
  sizing.vertex_count = 500;
  EXPECT_EQ(sizing.slots(), 42u);  // a quarter of the neighbours on top
  Result<StoragePlan> plan = fedwalk::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  ExpectCarveMatchesPlan(sizing, [&](Arena& arena) {
    Result<fedwalk::WalkArenaStorage> carved = fedwalk::Carve(arena, sizing);
    if (carved.ok()) {
      const fedwalk::WalkStorage& s = carved->storage;
      EXPECT_EQ(s.neighbour_peers.size(), 40u);
      EXPECT_EQ(s.neighbour_peers.data(), carved->neighbour_peers.span().data());
      EXPECT_EQ(s.peer_cache.size(), 16u);
      EXPECT_EQ(s.slots.size(), 42u);
      EXPECT_EQ(s.slot_memory.size(), 42 * fedwalk::WalkSlotBytes(40));
      EXPECT_EQ(s.scratch.size(), fedwalk::WalkSlotBytes(40));
      EXPECT_EQ(s.tree_parent.size(), fedwalk::TreeIndex::NodeCount(500));
      EXPECT_EQ(s.tree_leaf_of_vertex.size(), 500u);
      EXPECT_EQ(s.pool.size(), 500u);
    }
    return carved.status();
  });
  sizing.neighbours = 100000;
  EXPECT_EQ(sizing.slots(), fedwalk::kMaxPendingWalks);
}

TEST(RoleSizingTest, SecureCompare) {
  compare::CompareSizing sizing;
  sizing.neighbours = 6;
  sizing.contexts = 3;
  sizing.slots_per_context = 5;
  Result<StoragePlan> plan = compare::Plan(sizing);
  ASSERT_TRUE(plan.ok());
  // The default room is the widest plan's: 32-bit inputs in 8-bit digits.
  EXPECT_EQ(compare::PlanComparison(32, 8)->table_bytes(), 256u);
  EXPECT_GE(plan->bytes(), 6 * sizeof(compare::ComparePeer) + 3 * sizeof(compare::CompareContext) +
                               15 * sizeof(compare::ComparisonSlot) + 15 * 256u);
  ExpectCarveMatchesPlan(sizing, [&](Arena& arena) {
    Result<compare::CompareArenaStorage> carved = compare::Carve(arena, sizing);
    if (carved.ok()) {
      EXPECT_EQ(carved->peers.size(), 6u);
      EXPECT_EQ(carved->contexts.size(), 3u);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(carved->contexts[i].slots.size(), 5u);
        EXPECT_EQ(carved->contexts[i].tables.size(), 5u * 256u);
      }
      // Contexts do not share memory.
      EXPECT_NE(carved->contexts[0].tables.data(), carved->contexts[1].tables.data());
    }
    return carved.status();
  });

  sizing.width = 33;  // beyond the contract
  EXPECT_EQ(compare::Plan(sizing).status(), Status::InvalidArgument());
  sizing.width = 16;
  sizing.digit_bits = 4;  // narrower jobs only: smaller tables
  Result<StoragePlan> narrow = compare::Plan(sizing);
  ASSERT_TRUE(narrow.ok());
  EXPECT_LT(narrow->bytes(), plan->bytes());
}

}  // namespace
}  // namespace nodefl
