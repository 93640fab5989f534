// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "heap_counter.h"

namespace nodefl {
namespace {

TEST(ArenaTest, AlignsAndZeroInitialises) {
  alignas(16) uint8_t buffer[256];
  for (auto& b : buffer) b = 0xAB;
  Arena arena(Span<uint8_t>(buffer + 1, sizeof(buffer) - 1));  // deliberately misaligned base
  NODEFL_EXPECT_NO_HEAP({
    Result<Span<uint8_t>> bytes = arena.Allocate<uint8_t>(3);
    ASSERT_TRUE(bytes.ok());
    Result<Span<uint64_t>> words = arena.Allocate<uint64_t>(4);
    ASSERT_TRUE(words.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(words->data()) % alignof(uint64_t), 0u);
    for (uint64_t w : *words) EXPECT_EQ(w, 0u);
    EXPECT_GE(arena.used(), 3u + 32u);
  });
}

TEST(ArenaTest, ExhaustionLeavesStateUnchanged) {
  uint8_t buffer[64];
  Arena arena(buffer);
  ASSERT_TRUE(arena.Allocate<uint8_t>(60).ok());
  const size_t used = arena.used();
  EXPECT_EQ(arena.Allocate<uint32_t>(2).status(), Status::ResourceExhausted());
  EXPECT_EQ(arena.used(), used);
  EXPECT_EQ(arena.Allocate<uint64_t>(SIZE_MAX / 4).status(), Status::ResourceExhausted());
}

TEST(ArenaTest, CheckpointRewindAndHighWater) {
  uint8_t buffer[128];
  Arena arena(buffer);
  ASSERT_TRUE(arena.Allocate<uint8_t>(10).ok());
  const Arena::Checkpoint cp = arena.checkpoint();
  ASSERT_TRUE(arena.Allocate<uint8_t>(50).ok());
  EXPECT_EQ(arena.used(), 60u);
  arena.Rewind(cp);
  EXPECT_EQ(arena.used(), 10u);
  EXPECT_EQ(arena.high_water_mark(), 60u);
  arena.Reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.remaining(), 128u);
}

TEST(ArenaTest, RejectsBadAlignmentAndEmptyArena) {
  uint8_t buffer[16];
  Arena arena(buffer);
  EXPECT_EQ(arena.AllocateBytes(4, 3).status(), Status::InvalidArgument());
  Arena empty;
  EXPECT_EQ(empty.Allocate<int>(1).status(), Status::ResourceExhausted());
}

}  // namespace
}  // namespace nodefl
