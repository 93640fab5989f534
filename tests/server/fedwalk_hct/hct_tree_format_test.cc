// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kTree artefact: the byte layout of hct_format.h, round trips, and
// Parse refusing truncated, padded, corrupted and random input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hct_test_support.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::fedwalk {
namespace {

void PutU32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutF32(std::vector<uint8_t>& b, size_t at, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  PutU32(b, at, bits);
}

HctTree RandomTree(uint64_t seed, uint32_t m) {
  Drbg rng;
  test::Seed(rng, seed, m);
  const std::vector<Merge> merges = test::RandomMerges(rng, m, /*tied_heights=*/seed % 2 == 0);
  return HctTree::FromMerges(merges, test::RandomLeafVertices(rng, m, 3 * m)).value();
}

TEST(HctTreeFormatTest, LayoutOfASmallTree) {
  // Leaves 0, 1, 2 are vertices 7, 3, 9; merges (0, 2) at 0.5, (1, 3) at 1.5.
  const HctTree t = HctTree::FromMerges(std::vector<Merge>{{0, 2, 0.5, 2}, {1, 3, 1.5, 3}}, {7, 3, 9}).value();
  const std::vector<uint8_t> want = {
      3, 0, 0, 0,                                             // m
      7, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0,                     // leaf vertex ids
      0, 0, 0, 0, 2, 0, 0, 0, 0x00, 0x00, 0x00, 0x3F,         // (0, 2) 0.5f
      1, 0, 0, 0, 3, 0, 0, 0, 0x00, 0x00, 0xC0, 0x3F,         // (1, 3) 1.5f
  };
  EXPECT_EQ(t.Serialize(), want);
  EXPECT_EQ(want.size(), nodefl::fedwalk::TreeArtefactBytes(3));
  const HctTree back = HctTree::Parse(want).value();
  EXPECT_EQ(back, t);
  EXPECT_EQ(back.leaf_vertex(2), 9u);
  EXPECT_EQ(back.merges()[1].size, 3u);
}

TEST(HctTreeFormatTest, RoundTrips) {
  for (uint32_t m : {0u, 1u, 2u, 5u, 64u, 500u}) {
    const HctTree t = m == 0 ? HctTree::FromMerges({}, {}).value() : RandomTree(m, m);
    const std::vector<uint8_t> bytes = t.Serialize();
    ASSERT_EQ(bytes.size(), nodefl::fedwalk::TreeArtefactBytes(m));
    const std::optional<HctTree> back = HctTree::Parse(bytes);
    ASSERT_TRUE(back.has_value()) << "m " << m;
    EXPECT_EQ(*back, t);
    EXPECT_EQ(back->Serialize(), bytes);
  }
}

TEST(HctTreeFormatTest, RejectsTruncatedAndPaddedInput) {
  const std::vector<uint8_t> bytes = RandomTree(3, 12).Serialize();
  for (size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_FALSE(HctTree::Parse(std::span(bytes.data(), len)).has_value()) << "length " << len;
  }
  std::vector<uint8_t> padded = bytes;
  padded.push_back(0);
  EXPECT_FALSE(HctTree::Parse(padded).has_value());
}

TEST(HctTreeFormatTest, RejectsCorruptedFields) {
  // Four leaves: merges at 20, 32, 44 (a, b, height at +0, +4, +8).
  const HctTree t = HctTree::FromMerges(std::vector<Merge>{{0, 1, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 4}},
                                        {0, 1, 2, 3}).value();
  const std::vector<uint8_t> good = t.Serialize();
  ASSERT_TRUE(HctTree::Parse(good).has_value());
  const auto rejects = [&](auto&& corrupt) {
    std::vector<uint8_t> b = good;
    corrupt(b);
    return !HctTree::Parse(b).has_value();
  };
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 0, 5); }));             // leaf count vs length
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 0, 0xFFFFFFFFu); }));   // huge leaf count
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 16, 2); }));            // vertex 2 twice
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 16, 0xFFFFFFFFu); }));  // absent-vertex marker
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 24, 0); }));            // (0, 0)
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 20, 1); PutU32(b, 24, 0); }));  // a > b
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 24, 4); }));            // refers to itself
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 36, 6); }));            // refers ahead
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 32, 1); }));            // leaf 1 twice
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 44, 0); }));            // node 0 twice
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 28, 5.0f); }));         // height drops
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 28, NAN); }));
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 52, INFINITY); }));
}

// Random corruption never crashes Parse, and whatever it accepts is a tree
// it would publish byte for byte (so acceptance means the input was valid,
// not that garbage was silently repaired).
TEST(HctTreeFormatTest, FuzzedInputNeverCrashes) {
  Drbg rng;
  test::Seed(rng, 2024);
  const std::vector<uint8_t> good = RandomTree(2, 30).Serialize();
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + static_cast<int>(rng.UniformBelow(4));
    for (int f = 0; f < flips; ++f) b[rng.UniformBelow(b.size())] ^= static_cast<uint8_t>(1 + rng.UniformBelow(255));
    if (rng.UniformBelow(8) == 0) b.resize(rng.UniformBelow(b.size() + 1));
    const std::optional<HctTree> t = HctTree::Parse(b);
    if (t.has_value()) {
      ++accepted;
      EXPECT_EQ(t->Serialize(), b);
    }
  }
  // Height bytes and leaf ids can change validly, structure bytes mostly
  // cannot: both outcomes must occur.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 20000);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<uint8_t> b(rng.UniformBelow(200));
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng.NextU32());
    if (b.size() >= 4) PutU32(b, 0, static_cast<uint32_t>(rng.UniformBelow(20)));
    const std::optional<HctTree> t = HctTree::Parse(b);
    if (t.has_value()) {
      EXPECT_EQ(t->Serialize(), b);
    }
  }
}

}  // namespace
}  // namespace nodefl::server::fedwalk
