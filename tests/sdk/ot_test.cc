// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Oblivious transfer: the receiver's key equals the sender's key of the
// chosen side and differs from the other; keys look independent; bad points
// are refused; IKNP's transpose and extension agree with their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/ot/base_ot.h"
#include "nodefl/ot/bit_matrix.h"
#include "nodefl/ot/iknp.h"
#include "nodefl/random/drbg.h"

namespace nodefl::ot {
namespace {

bool Same(const OtKey& a, const OtKey& b) { return std::memcmp(a.bytes, b.bytes, kOtKeyBytes) == 0; }

OtTag Tag(uint8_t v) {
  OtTag t;
  for (auto& b : t.bytes) b = v;
  return t;
}

class OtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sender_rng_.SeedDeterministic(1).ok());
    ASSERT_TRUE(receiver_rng_.SeedDeterministic(2).ok());
  }
  Drbg sender_rng_, receiver_rng_;
};

TEST_F(OtTest, BaseOtReceiverGetsExactlyTheChosenKey) {
  constexpr size_t kCount = 24;
  BaseOtSender sender;
  BaseOtReceiver receiver;
  uint8_t a[kOtPointBytes];
  ASSERT_TRUE(sender.Start(Tag(7), &crypto::DrbgRandom, &sender_rng_, ByteSpan(a, sizeof(a))).ok());
  ASSERT_TRUE(receiver.Begin(Tag(7), ConstByteSpan(a, sizeof(a)), &crypto::DrbgRandom, &receiver_rng_).ok());
  uint8_t choices[3] = {0x5A, 0xC3, 0x0F};
  std::vector<uint8_t> points(kCount * kOtPointBytes);
  std::vector<OtKey> chosen(kCount), k0(kCount), k1(kCount);
  // Two calls, as segments would arrive.
  ASSERT_TRUE(receiver.Choose(ConstByteSpan(choices, 2), 0, ByteSpan(points).first(16 * kOtPointBytes),
                              Span<OtKey>(chosen).first(16))
                  .ok());
  ASSERT_TRUE(receiver.Choose(ConstByteSpan(choices + 2, 1), 16, ByteSpan(points).subspan(16 * kOtPointBytes),
                              Span<OtKey>(chosen).subspan(16))
                  .ok());
  ASSERT_TRUE(sender.Respond(points, 0, k0, k1).ok());
  for (size_t i = 0; i < kCount; ++i) {
    const bool c = GetBit(ConstByteSpan(choices, 3), i);
    EXPECT_TRUE(Same(chosen[i], c ? k1[i] : k0[i])) << i;
    EXPECT_FALSE(Same(chosen[i], c ? k0[i] : k1[i])) << i;
    EXPECT_FALSE(Same(k0[i], k1[i]));
    if (i > 0) {
      EXPECT_FALSE(Same(k0[i], k0[i - 1]));
    }
  }
}

TEST_F(OtTest, BaseOtKeysDependOnTheTag) {
  BaseOtSender sender;
  BaseOtReceiver receiver;
  uint8_t a[kOtPointBytes];
  ASSERT_TRUE(sender.Start(Tag(1), &crypto::DrbgRandom, &sender_rng_, ByteSpan(a, sizeof(a))).ok());
  ASSERT_TRUE(receiver.Begin(Tag(2), ConstByteSpan(a, sizeof(a)), &crypto::DrbgRandom, &receiver_rng_).ok());
  uint8_t choice = 0;
  uint8_t point[kOtPointBytes];
  OtKey chosen, k0, k1;
  ASSERT_TRUE(receiver.Choose(ConstByteSpan(&choice, 1), 0, ByteSpan(point, sizeof(point)), Span<OtKey>(&chosen, 1)).ok());
  ASSERT_TRUE(sender.Respond(ConstByteSpan(point, sizeof(point)), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)).ok());
  EXPECT_FALSE(Same(chosen, k0));
  EXPECT_FALSE(Same(chosen, k1));
}

TEST_F(OtTest, BaseOtRefusesPointsOffTheCurveAndMisuse) {
  BaseOtSender sender;
  BaseOtReceiver receiver;
  uint8_t a[kOtPointBytes];
  OtKey k0, k1;
  EXPECT_EQ(sender.Respond(ConstByteSpan(a, sizeof(a)), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)),
            Status::FailedPrecondition());
  ASSERT_TRUE(sender.Start(Tag(3), &crypto::DrbgRandom, &sender_rng_, ByteSpan(a, sizeof(a))).ok());
  uint8_t bad[kOtPointBytes];
  std::memcpy(bad, a, sizeof(bad));
  bad[40] ^= 1;
  EXPECT_EQ(receiver.Begin(Tag(3), ConstByteSpan(bad, sizeof(bad)), &crypto::DrbgRandom, &receiver_rng_),
            Status::Unauthenticated());
  EXPECT_EQ(sender.Respond(ConstByteSpan(bad, sizeof(bad)), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)),
            Status::Unauthenticated());
  bad[0] = 0x02;  // compressed form: not accepted
  EXPECT_EQ(sender.Respond(ConstByteSpan(bad, sizeof(bad)), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)),
            Status::Unauthenticated());
  EXPECT_EQ(sender.Respond(ConstByteSpan(a, 64), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)),
            Status::InvalidArgument());
  EXPECT_EQ(receiver.Begin(Tag(3), ConstByteSpan(a, sizeof(a)), nullptr, nullptr), Status::InvalidArgument());
  // B = A would make the second key a*(B - A) the identity: refused as a
  // malformed peer message, not an internal error.
  EXPECT_EQ(sender.Respond(ConstByteSpan(a, sizeof(a)), 0, Span<OtKey>(&k0, 1), Span<OtKey>(&k1, 1)),
            Status::Unauthenticated());
}

TEST(BitMatrixTest, TransposeMatchesTheDefinition) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(9).ok());
  uint8_t in[kBitMatrixSide][kBitMatrixRowBytes], out[kBitMatrixSide][kBitMatrixRowBytes], back[kBitMatrixSide][kBitMatrixRowBytes];
  ASSERT_TRUE(rng.Fill(ByteSpan(&in[0][0], sizeof(in))).ok());
  TransposeBitMatrix(in, out);
  for (unsigned i = 0; i < kBitMatrixSide; ++i) {
    for (unsigned j = 0; j < kBitMatrixSide; ++j) {
      ASSERT_EQ(GetBit(ConstByteSpan(out[j], kBitMatrixRowBytes), i), GetBit(ConstByteSpan(in[i], kBitMatrixRowBytes), j))
          << i << "," << j;
    }
  }
  TransposeBitMatrix(out, back);
  EXPECT_EQ(std::memcmp(in, back, sizeof(in)), 0);
}

// Runs the base phase between an IKNP pair, in segments of up to 60 points.
void RunBase(IknpSender& sender, IknpReceiver& receiver, Drbg& srng, Drbg& rrng) {
  uint8_t a[kOtPointBytes];
  ASSERT_TRUE(receiver.StartBase(Tag(5), &crypto::DrbgRandom, &rrng, ByteSpan(a, sizeof(a))).ok());
  ASSERT_TRUE(sender.OnBasePoint(Tag(5), ConstByteSpan(a, sizeof(a)), &crypto::DrbgRandom, &srng).ok());
  std::vector<uint8_t> points(60 * kOtPointBytes);
  for (size_t first = 0; first < kIknpBaseOts; first += 60) {
    const size_t count = std::min<size_t>(60, kIknpBaseOts - first);
    ASSERT_TRUE(sender.WriteBasePoints(first, count, points).ok());
    ASSERT_TRUE(receiver.OnBasePoints(ConstByteSpan(points).first(count * kOtPointBytes), first).ok());
  }
  EXPECT_TRUE(sender.ready());
  EXPECT_TRUE(receiver.ready());
}

TEST_F(OtTest, IknpExtensionGivesCorrectKeysOverManyBlocks) {
  IknpSender sender;
  IknpReceiver receiver;
  RunBase(sender, receiver, sender_rng_, receiver_rng_);
  std::vector<uint8_t> u(kIknpBlockBytes);
  std::vector<OtKey> chosen(kIknpBlockOts), k0(kIknpBlockOts), k1(kIknpBlockOts);
  size_t ones = 0, total = 0;
  std::vector<OtKey> previous_k0;
  for (int block = 0; block < 5; ++block) {
    uint8_t choices[16];
    ASSERT_TRUE(receiver_rng_.Fill(ByteSpan(choices, sizeof(choices))).ok());
    ASSERT_TRUE(receiver.ExtendBlock(ConstByteSpan(choices, 16), u, chosen).ok());
    ASSERT_TRUE(sender.OnBlock(u, k0, k1).ok());
    for (size_t j = 0; j < kIknpBlockOts; ++j) {
      const bool c = GetBit(ConstByteSpan(choices, 16), j);
      ASSERT_TRUE(Same(chosen[j], c ? k1[j] : k0[j])) << block << ":" << j;
      ASSERT_FALSE(Same(chosen[j], c ? k0[j] : k1[j])) << block << ":" << j;
      for (size_t b = 0; b < kOtKeyBytes; ++b) ones += __builtin_popcount(k0[j].bytes[b]);
      total += 8 * kOtKeyBytes;
    }
    if (!previous_k0.empty()) {
      EXPECT_FALSE(Same(previous_k0[0], k0[0]));
    }
    previous_k0 = k0;
  }
  // Key bits are balanced: 81,920 bits, 1e-6 two-sided bound ~ 4.9 sigma.
  const double sigma = std::sqrt(total * 0.25);
  EXPECT_NEAR(static_cast<double>(ones), total / 2.0, 4.9 * sigma);
  EXPECT_EQ(sender.blocks(), 5u);
}

TEST_F(OtTest, IknpRefusesOutOfOrderBaseAndEarlyBlocks) {
  IknpSender sender;
  IknpReceiver receiver;
  std::vector<uint8_t> u(kIknpBlockBytes);
  std::vector<OtKey> keys(kIknpBlockOts), k1(kIknpBlockOts);
  uint8_t choices[16] = {};
  EXPECT_EQ(receiver.ExtendBlock(ConstByteSpan(choices, 16), u, keys), Status::FailedPrecondition());
  EXPECT_EQ(sender.OnBlock(u, keys, k1), Status::FailedPrecondition());
  uint8_t a[kOtPointBytes];
  ASSERT_TRUE(receiver.StartBase(Tag(5), &crypto::DrbgRandom, &receiver_rng_, ByteSpan(a, sizeof(a))).ok());
  ASSERT_TRUE(sender.OnBasePoint(Tag(5), ConstByteSpan(a, sizeof(a)), &crypto::DrbgRandom, &sender_rng_).ok());
  std::vector<uint8_t> points(8 * kOtPointBytes);
  EXPECT_EQ(sender.WriteBasePoints(8, 8, points), Status::InvalidArgument());
  ASSERT_TRUE(sender.WriteBasePoints(0, 8, points).ok());
  EXPECT_EQ(receiver.OnBasePoints(points, 8), Status::InvalidArgument());
  ASSERT_TRUE(receiver.OnBasePoints(points, 0).ok());
  EXPECT_FALSE(receiver.ready());
}

}  // namespace
}  // namespace nodefl::ot
