// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kCodebook artefact: a hand-written byte string, round trips of built
// codebooks, and Parse refusing truncated, padded, corrupted and random
// input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hct_test_support.h"
#include "nodefl/server/fedwalk/hct/codebook.h"

namespace nodefl::server::fedwalk {
namespace {

using nodefl::fedwalk::kQ31One;

void PutU16(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}
void PutU32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutF32(std::vector<uint8_t>& b, size_t at, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  PutU32(b, at, bits);
}

// Three vertices, K = 2: row 0 = {2 always; 0 half, else entry 0} with
// mass 0.25 dropped, row 1 empty, row 2 = {2}.
std::vector<uint8_t> HandWritten() {
  std::vector<uint8_t> b(8 + 8 + 2 * 12 + 8 + 8 + 12);
  PutU32(b, 0, 3);
  PutU16(b, 4, 2);
  PutU16(b, 8, 2);  // row 0
  PutF32(b, 12, 0.25f);
  PutU32(b, 16, 2), PutU32(b, 20, kQ31One), PutU32(b, 24, 0);
  PutU32(b, 28, 0), PutU32(b, 32, kQ31One / 2), PutU32(b, 36, 0);
  PutU16(b, 40, 0);  // row 1
  PutU16(b, 48, 1);  // row 2
  PutU32(b, 56, 2), PutU32(b, 60, kQ31One), PutU32(b, 64, 0);
  return b;
}

Codebook BuiltCodebook(uint64_t seed, uint32_t m, uint32_t vertex_count, uint32_t k) {
  Drbg rng;
  test::Seed(rng, seed, m);
  CondensedMatrix d = test::RandomMatrix(rng, m);
  CondensedMatrix copy = d;
  const HctTree tree =
      HctTree::FromMerges(ClusterNnChain(std::move(copy)).value(), test::RandomLeafVertices(rng, m, vertex_count))
          .value();
  return Codebook::Build(d, tree, vertex_count, {.epsilon = 1.0, .k = k}).value();
}

TEST(CodebookFormatTest, ParsesTheDocumentedLayout) {
  const std::vector<uint8_t> bytes = HandWritten();
  const Codebook cb = Codebook::Parse(bytes).value();
  EXPECT_EQ(cb.vertex_count(), 3u);
  EXPECT_EQ(cb.k(), 2u);
  ASSERT_EQ(cb.row(0).size(), 2u);
  EXPECT_EQ(cb.row(0)[0].vertex, 2u);
  EXPECT_EQ(cb.row(0)[1].accept_q31, kQ31One / 2);
  EXPECT_EQ(cb.truncated_mass(0), 0.25);
  EXPECT_TRUE(cb.row(1).empty());
  ASSERT_EQ(cb.row(2).size(), 1u);
  EXPECT_EQ(cb.max_truncated_mass(), 0.25);
  EXPECT_EQ(cb.Serialize(), bytes);
}

TEST(CodebookFormatTest, RoundTrips) {
  for (auto [m, vertices, k] : {std::tuple{1u, 1u, 1u}, {5u, 9u, 2u}, {40u, 50u, 8u}, {40u, 40u, 64u}}) {
    const Codebook cb = BuiltCodebook(m, m, vertices, k);
    const std::vector<uint8_t> bytes = cb.Serialize();
    const std::optional<Codebook> back = Codebook::Parse(bytes);
    ASSERT_TRUE(back.has_value()) << "m " << m;
    EXPECT_EQ(*back, cb);
    EXPECT_EQ(back->Serialize(), bytes);
  }
  const Codebook empty = Codebook::Parse(std::vector<uint8_t>{0, 0, 0, 0, 1, 0, 0, 0}).value();
  EXPECT_EQ(empty.vertex_count(), 0u);
}

TEST(CodebookFormatTest, RejectsTruncatedAndPaddedInput) {
  const std::vector<uint8_t> bytes = BuiltCodebook(3, 6, 8, 3).Serialize();
  for (size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_FALSE(Codebook::Parse(std::span(bytes.data(), len)).has_value()) << "length " << len;
  }
  std::vector<uint8_t> padded = bytes;
  padded.push_back(0);
  EXPECT_FALSE(Codebook::Parse(padded).has_value());
}

TEST(CodebookFormatTest, RejectsCorruptedFields) {
  const std::vector<uint8_t> good = HandWritten();
  ASSERT_TRUE(Codebook::Parse(good).has_value());
  const auto rejects = [&](auto&& corrupt) {
    std::vector<uint8_t> b = good;
    corrupt(b);
    return !Codebook::Parse(b).has_value();
  };
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 0, 4); }));             // one row short
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 0, 0xFFFFFFFFu); }));   // absent-vertex marker / huge
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 0, 0x7FFFFFFFu); }));   // huge
  EXPECT_TRUE(rejects([](auto& b) { PutU16(b, 4, 0); }));             // K = 0
  EXPECT_TRUE(rejects([](auto& b) { PutU16(b, 4, 1025); }));          // K > kMaxCodebookK
  EXPECT_TRUE(rejects([](auto& b) { PutU16(b, 4, 1); }));             // row 0 has 2 > K
  EXPECT_TRUE(rejects([](auto& b) { PutU16(b, 6, 1); }));             // reserved
  EXPECT_TRUE(rejects([](auto& b) { PutU16(b, 10, 1); }));            // row reserved
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 12, NAN); }));
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 12, 1.0f); }));
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 12, -0.25f); }));
  EXPECT_TRUE(rejects([](auto& b) { PutF32(b, 44, 0.5f); }));         // empty row with mass
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 16, 3); }));            // vertex >= vertex_count
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 28, 2); }));            // vertex 2 twice in row 0
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 32, kQ31One + 1); }));  // accept > 1
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 36, 2); }));            // alias out of the row
  EXPECT_TRUE(rejects([](auto& b) { PutU32(b, 64, 1); }));            // alias in a 1-entry row
}

// Random corruption never crashes Parse; what it accepts re-serialises to
// the same bytes.
TEST(CodebookFormatTest, FuzzedInputNeverCrashes) {
  Drbg rng;
  test::Seed(rng, 4048);
  const std::vector<uint8_t> good = BuiltCodebook(5, 12, 16, 4).Serialize();
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + static_cast<int>(rng.UniformBelow(4));
    for (int f = 0; f < flips; ++f) b[rng.UniformBelow(b.size())] ^= static_cast<uint8_t>(1 + rng.UniformBelow(255));
    if (rng.UniformBelow(8) == 0) b.resize(rng.UniformBelow(b.size() + 1));
    const std::optional<Codebook> cb = Codebook::Parse(b);
    if (cb.has_value()) {
      ++accepted;
      EXPECT_EQ(cb->Serialize(), b);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 20000);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<uint8_t> b(rng.UniformBelow(200));
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng.NextU32());
    if (b.size() >= 8) {
      PutU32(b, 0, static_cast<uint32_t>(rng.UniformBelow(6)));
      PutU16(b, 4, 1 + static_cast<uint32_t>(rng.UniformBelow(4)));
      PutU16(b, 6, 0);
    }
    const std::optional<Codebook> cb = Codebook::Parse(b);
    if (cb.has_value()) {
      EXPECT_EQ(cb->Serialize(), b);
    }
  }
}

}  // namespace
}  // namespace nodefl::server::fedwalk
