// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/sorted_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nodefl {
namespace {

struct Peer {
  uint32_t id;
  int tag;
};

constexpr auto kId = [](const Peer& p) { return p.id; };

TEST(SortedSearchTest, EmptySpan) {
  Span<Peer> none;
  EXPECT_EQ(LowerBound(none, 5u, kId), 0u);
  EXPECT_EQ(FindSorted(none, 5u, kId), nullptr);
}

TEST(SortedSearchTest, KeysBelowAndAboveEveryElement) {
  Peer peers[] = {{10, 0}, {20, 1}, {30, 2}};
  Span<Peer> s(peers);
  EXPECT_EQ(LowerBound(s, 1u, kId), 0u);   // all larger
  EXPECT_EQ(LowerBound(s, 99u, kId), 3u);  // all smaller: one past the end
  EXPECT_EQ(FindSorted(s, 1u, kId), nullptr);
  EXPECT_EQ(FindSorted(s, 99u, kId), nullptr);
}

TEST(SortedSearchTest, HitsAndGaps) {
  Peer peers[] = {{10, 0}, {20, 1}, {30, 2}};
  Span<Peer> s(peers);
  EXPECT_EQ(LowerBound(s, 20u, kId), 1u);
  EXPECT_EQ(LowerBound(s, 21u, kId), 2u);
  EXPECT_EQ(FindSorted(s, 30u, kId), &peers[2]);
  EXPECT_EQ(FindSorted(s, 25u, kId), nullptr);
  // Through a span of const elements the result is const too.
  Span<const Peer> c(peers);
  const Peer* found = FindSorted(c, 10u, kId);
  EXPECT_EQ(found, &peers[0]);
}

TEST(SortedSearchTest, DuplicatesGiveTheFirst) {
  Peer peers[] = {{1, 0}, {4, 1}, {4, 2}, {4, 3}, {9, 4}};
  Span<Peer> s(peers);
  EXPECT_EQ(LowerBound(s, 4u, kId), 1u);
  ASSERT_NE(FindSorted(s, 4u, kId), nullptr);
  EXPECT_EQ(FindSorted(s, 4u, kId)->tag, 1);
  EXPECT_EQ(LowerBound(s, 5u, kId), 4u);
}

TEST(SortedSearchTest, AgreesWithStdLowerBoundOnEverySize) {
  // Every length up to 40 (odd and even halves) and every key in and
  // around the range, against the standard library's answer.
  for (uint32_t n = 0; n <= 40; ++n) {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < n; ++i) ids.push_back(2 * (i / 3));  // runs of three
    Span<const uint32_t> s(ids);
    for (uint32_t key = 0; key <= 2 * n + 2; ++key) {
      const size_t expected = static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), key) - ids.begin());
      EXPECT_EQ(LowerBound(s, key, [](uint32_t v) { return v; }), expected) << "n " << n << " key " << key;
    }
  }
}

static_assert(LowerBound(Span<const int>(), 3, [](int v) { return v; }) == 0, "usable in constant expressions");

}  // namespace
}  // namespace nodefl
