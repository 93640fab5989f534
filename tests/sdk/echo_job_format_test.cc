// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The neighbour-echo contract (protocol/echo/job_format.h): parameters and
// the peers-gone record.
#include "nodefl/protocol/echo/job_format.h"

#include <gtest/gtest.h>

#include <vector>

namespace nodefl::echo {
namespace {

TEST(EchoJobFormatTest, ParametersRoundTripAndShortFormTakesDefaults) {
  EchoParameters p;
  for (size_t i = 0; i < kEchoJobSaltBytes; ++i) p.salt[i] = static_cast<uint8_t>(i * 7);
  p.messages_per_edge = 3;
  p.payload_bytes = 200;
  std::vector<uint8_t> out(kEchoParametersBytes);
  ASSERT_TRUE(EncodeEchoParameters(p, out).ok());
  const Result<EchoParameters> back = DecodeEchoParameters(out);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->messages_per_edge, 3u);
  EXPECT_EQ(back->payload_bytes, 200u);
  EXPECT_EQ(back->salt[5], 35);
  const Result<EchoParameters> salt_only = DecodeEchoParameters(ConstByteSpan(out).first(kEchoJobSaltBytes));
  ASSERT_TRUE(salt_only.ok());
  EXPECT_EQ(salt_only->messages_per_edge, 1u);
  EXPECT_EQ(salt_only->payload_bytes, kEchoHeaderBytes);
  p.payload_bytes = kEchoHeaderBytes - 1;
  EXPECT_EQ(EncodeEchoParameters(p, out).status(), Status::InvalidArgument());
}

TEST(EchoJobFormatTest, PeersGoneRoundTrip) {
  const std::vector<uint32_t> gone = {7, 70000, 3};
  std::vector<uint8_t> out(16);
  const Result<size_t> n = EncodeEchoPeersGone(gone, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 16u);
  const std::vector<uint8_t> head = {3, 0, 0, 0, 7, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + 8), head);
  const Result<uint32_t> count = DecodeEchoPeersGone(out);
  ASSERT_TRUE(count.ok());
  ASSERT_EQ(*count, 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(EchoPeersGoneAt(out, i), gone[i]);
}

TEST(EchoJobFormatTest, PeersGoneRefusesBadCountsAndSizes) {
  std::vector<uint8_t> out(4 + 4 * (kEchoMaxPeersGonePerRecord + 1));
  EXPECT_EQ(EncodeEchoPeersGone({}, out).status(), Status::InvalidArgument());
  const std::vector<uint32_t> too_many(kEchoMaxPeersGonePerRecord + 1, 1);
  EXPECT_EQ(EncodeEchoPeersGone(too_many, out).status(), Status::InvalidArgument());
  const std::vector<uint32_t> most(kEchoMaxPeersGonePerRecord, 1);
  const Result<size_t> full = EncodeEchoPeersGone(most, out);
  ASSERT_TRUE(full.ok());
  // The largest record fits a JobData payload (4,096 bytes).
  EXPECT_LE(*full, 4096u);
  EXPECT_EQ(EncodeEchoPeersGone(most, ByteSpan(out).first(*full - 1)).status(), Status::ResourceExhausted());

  const std::vector<uint32_t> two = {1, 2};
  std::vector<uint8_t> rec(12);
  ASSERT_TRUE(EncodeEchoPeersGone(two, rec).ok());
  EXPECT_FALSE(DecodeEchoPeersGone(ConstByteSpan(rec).first(11)).ok());  // short
  std::vector<uint8_t> longer = rec;
  longer.push_back(0);
  EXPECT_FALSE(DecodeEchoPeersGone(longer).ok());  // trailing byte
  rec[0] = 0;
  EXPECT_FALSE(DecodeEchoPeersGone(ConstByteSpan(rec).first(4)).ok());  // zero count
  EXPECT_FALSE(DecodeEchoPeersGone(ConstByteSpan(rec).first(3)).ok());  // no count
  std::vector<uint8_t> huge(8, 0);
  huge[0] = 0xff;
  huge[1] = 0xff;  // 65,535 ids claimed in 8 bytes
  EXPECT_FALSE(DecodeEchoPeersGone(huge).ok());
}

}  // namespace
}  // namespace nodefl::echo
