// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/storage_plan.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "heap_counter.h"

namespace nodefl {
namespace {

TEST(StoragePlanTest, PadsEachPieceToItsAlignment) {
  StoragePlan plan;
  ASSERT_TRUE(plan.Add<uint8_t>(3).ok());    // 0..3
  ASSERT_TRUE(plan.Add<uint64_t>(2).ok());   // padded to 8: 8..24
  ASSERT_TRUE(plan.Add<uint16_t>(1).ok());   // 24..26
  EXPECT_EQ(plan.bytes(), 26u);
  EXPECT_EQ(plan.alignment(), alignof(uint64_t));
  EXPECT_EQ(plan.ArenaBytes(), 26u + alignof(uint64_t) - 1);

  StoragePlan device;
  ASSERT_TRUE(device.Add<uint8_t>(1).ok());
  ASSERT_TRUE(device.Then(plan).ok());  // the block starts at its alignment
  EXPECT_EQ(device.bytes(), alignof(uint64_t) + 26u);
}

TEST(StoragePlanTest, OverflowAndBadAlignmentFail) {
  StoragePlan plan;
  EXPECT_EQ(plan.Add<uint64_t>(SIZE_MAX / 4), Status::ResourceExhausted());
  ASSERT_TRUE(plan.AddBytes(SIZE_MAX - 8, 1).ok());
  EXPECT_EQ(plan.AddBytes(16, 1), Status::ResourceExhausted());
  EXPECT_EQ(plan.AddBytes(1, 3), Status::InvalidArgument());
}

struct Counted {
  static int alive;
  Counted() { ++alive; }
  ~Counted() { --alive; }
  uint32_t value = 7;
};
int Counted::alive = 0;

TEST(StoragePlanTest, CarveTakesExactlyThePlanFromAMisalignedArena) {
  alignas(16) uint8_t buffer[512];
  Arena arena(Span<uint8_t>(buffer + 1, sizeof(buffer) - 1));  // next free byte misaligned
  StoragePlan plan;
  ASSERT_TRUE(plan.Add<uint8_t>(5).ok());
  ASSERT_TRUE(plan.Add<Counted>(4).ok());
  ASSERT_TRUE(plan.Add<uint64_t>(3).ok());
  NODEFL_EXPECT_NO_HEAP({
    Span<uint8_t> bytes;
    ArenaObjects<Counted> objects;
    Span<uint64_t> words;
    {
      ArenaCarve carve(arena, plan);
      ASSERT_TRUE(carve.status().ok());
      ASSERT_TRUE(carve.Take(bytes, 5).ok());
      ASSERT_TRUE(carve.Construct(objects, 4).ok());
      ASSERT_TRUE(carve.Take(words, 3).ok());
      ASSERT_TRUE(carve.Finish().ok());
    }
    EXPECT_EQ(Counted::alive, 4);
    EXPECT_EQ(objects[3].value, 7u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(words.data()) % alignof(uint64_t), 0u);
    // The arena's first byte was misaligned: the padding to the plan's
    // alignment comes first, then exactly the planned bytes.
    const size_t padding = (alignof(uint64_t) - 1) % alignof(uint64_t);
    EXPECT_EQ(arena.used(), padding + plan.bytes());
    EXPECT_LE(arena.used(), plan.ArenaBytes());
  });
  EXPECT_EQ(Counted::alive, 0);  // `objects` went out of scope
}

TEST(StoragePlanTest, TooSmallArenaFailsAndIsLeftUntouched) {
  alignas(16) uint8_t buffer[64];
  Arena arena(buffer);
  ASSERT_TRUE(arena.Allocate<uint8_t>(1).ok());
  StoragePlan plan;
  ASSERT_TRUE(plan.Add<uint64_t>(8).ok());  // 64 bytes after 7 of padding: no room
  ArenaCarve carve(arena, plan);
  EXPECT_EQ(carve.status(), Status::ResourceExhausted());
  Span<uint64_t> words;
  EXPECT_EQ(carve.Take(words, 8), Status::ResourceExhausted());
  EXPECT_EQ(carve.Finish(), Status::ResourceExhausted());
  EXPECT_EQ(arena.used(), 1u);
}

TEST(StoragePlanTest, UnfinishedCarveGivesItsBytesBack) {
  alignas(16) uint8_t buffer[128];
  Arena arena(buffer);
  StoragePlan plan;
  ASSERT_TRUE(plan.Add<uint32_t>(4).ok());
  ASSERT_TRUE(plan.Add<uint32_t>(4).ok());
  {
    ArenaCarve carve(arena, plan);
    Span<uint32_t> first;
    ASSERT_TRUE(carve.Take(first, 4).ok());
    EXPECT_EQ(arena.used(), 16u);
    // A Carve returning early on an error never reaches Finish().
  }
  EXPECT_EQ(arena.used(), 0u);
}

}  // namespace
}  // namespace nodefl
