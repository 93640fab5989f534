// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/span.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace nodefl {
namespace {

int Sum(Span<const int> values) {
  int s = 0;
  for (int v : values) s += v;
  return s;
}

TEST(SpanTest, FromArraysAndContainers) {
  int raw[] = {1, 2, 3};
  std::array<int, 2> arr = {4, 5};
  std::vector<int> vec = {6, 7, 8, 9};
  EXPECT_EQ(Sum(raw), 6);
  EXPECT_EQ(Sum(arr), 9);
  EXPECT_EQ(Sum(vec), 30);
  Span<int> mutable_span(raw);
  Span<const int> const_span = mutable_span;
  EXPECT_EQ(const_span.size(), 3u);
}

TEST(SpanTest, Slicing) {
  int raw[] = {0, 1, 2, 3, 4, 5};
  Span<int> s(raw);
  EXPECT_EQ(s.first(2).size(), 2u);
  EXPECT_EQ(s.last(2)[0], 4);
  EXPECT_EQ(s.subspan(1, 3)[2], 3);
  EXPECT_EQ(s.subspan(6).size(), 0u);
  EXPECT_EQ(AsBytes(s).size(), sizeof(raw));
}

TEST(SpanDeathTest, OutOfBoundsPanics) {
  int raw[] = {0, 1};
  Span<int> s(raw);
  EXPECT_DEATH({ (void)s[2]; }, "");
  EXPECT_DEATH({ (void)s.subspan(1, 2); }, "");
}

}  // namespace
}  // namespace nodefl
