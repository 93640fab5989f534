// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/fixed_vector.h"

#include <gtest/gtest.h>

#include "heap_counter.h"

namespace nodefl {
namespace {

TEST(FixedVectorTest, PushUntilFullThenRefuses) {
  uint32_t storage[3];
  FixedVector<uint32_t> v(storage);
  NODEFL_EXPECT_NO_HEAP({
    EXPECT_TRUE(v.push_back(1).ok());
    EXPECT_TRUE(v.push_back(2).ok());
    EXPECT_TRUE(v.push_back(3).ok());
    EXPECT_EQ(v.push_back(4), Status::ResourceExhausted());
  });
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v.back(), 3u);  // the refused element did not overwrite anything
  EXPECT_TRUE(v.full());
  v.pop_back();
  EXPECT_EQ(v.size(), 2u);
}

TEST(FixedVectorTest, ResizeValueInitialises) {
  int storage[4] = {9, 9, 9, 9};
  FixedVector<int> v(storage);
  EXPECT_TRUE(v.resize(3).ok());
  EXPECT_EQ(v[0] + v[1] + v[2], 0);
  EXPECT_EQ(v.resize(5), Status::ResourceExhausted());
  EXPECT_EQ(v.size(), 3u);
  v.clear();
  EXPECT_TRUE(v.empty());
}

TEST(InlineVectorTest, CopiesAreIndependent) {
  InlineVector<int, 4> a;
  EXPECT_TRUE(a.push_back(7).ok());
  InlineVector<int, 4> b = a;
  EXPECT_TRUE(b.push_back(8).ok());
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.span()[1], 8);
}

TEST(FixedVectorDeathTest, IndexPastSizePanics) {
  int storage[4];
  FixedVector<int> v(storage);
  EXPECT_TRUE(v.push_back(1).ok());
  EXPECT_DEATH({ (void)v[1]; }, "");
}

}  // namespace
}  // namespace nodefl
