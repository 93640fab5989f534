// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Each role's Plan and Carve (core/storage_plan.h): the carve takes exactly
// the planned bytes, a too-small arena fails cleanly and is left untouched,
// neither allocates, and the role runs on what was carved.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "heap_counter.h"
#include "nodefl/core/arena.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/echo/echo_sizing.h"

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

}  // namespace
}  // namespace nodefl
