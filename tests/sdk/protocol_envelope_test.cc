// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/envelope_codec.h"

#include <gtest/gtest.h>
#include <pb_decode.h>

#include <cstring>
#include <vector>

#include "heap_counter.h"
#include "nodefl/random/drbg.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/protocol/limits.h"
#include "protocol_test_util.h"

namespace nodefl::protocol {
namespace {

using testing::FillEnvelope;
using testing::kAllBodies;
using testing::SameEnvelope;

// A minimal protobuf writer, to hand-craft payloads independently of nanopb.
class Proto {
 public:
  Proto& Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Proto& Tag(uint32_t field, uint32_t wire_type) { return Varint((uint64_t{field} << 3) | wire_type); }
  Proto& U(uint32_t field, uint64_t v) { return Tag(field, 0).Varint(v); }
  Proto& Bytes(uint32_t field, const std::vector<uint8_t>& b) {
    Tag(field, 2).Varint(b.size());
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  Proto& Msg(uint32_t field, const Proto& m) { return Bytes(field, m.bytes_); }
  Proto& Raw(std::initializer_list<uint8_t> raw) {
    bytes_.insert(bytes_.end(), raw);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  ConstByteSpan span() const { return ConstByteSpan(bytes_.data(), bytes_.size()); }

 private:
  std::vector<uint8_t> bytes_;
};

Status Decode(const Proto& p, nodefl_wire_Envelope* env) { return DecodeEnvelope(p.span(), env); }

TEST(WireEnvelopeTest, EveryBodyRoundTripsAtMaximumSize) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(11).ok());
  static nodefl_wire_Envelope in, out;
  static uint8_t payload[kMaxFramePayloadBytes];
  for (const pb_size_t tag : kAllBodies) {
    SCOPED_TRACE(BodyName(tag));
    FillEnvelope(tag, rng, /*max=*/true, &in);
    Result<size_t> size = Status::Unknown();
    NODEFL_EXPECT_NO_HEAP(size = EncodeEnvelope(in, payload));
    ASSERT_TRUE(size.ok()) << size.status().str();
    EXPECT_LE(*size, static_cast<size_t>(nodefl_wire_Envelope_size));
    Status decoded = Status::Unknown();
    NODEFL_EXPECT_NO_HEAP(decoded = DecodeEnvelope(ConstByteSpan(payload, *size), &out));
    ASSERT_TRUE(decoded.ok()) << decoded.str();
    EXPECT_TRUE(SameEnvelope(in, out));
  }
}

TEST(WireEnvelopeTest, TheLargestBodiesReachTheGeneratedBound) {
  // Relay payloads and chunks at full size are the largest messages; the
  // generated bound (static_assert'ed <= kMaxFramePayloadBytes) is tight up
  // to the version field.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(12).ok());
  static nodefl_wire_Envelope env;
  size_t largest = 0;
  for (const pb_size_t tag : kAllBodies) {
    FillEnvelope(tag, rng, /*max=*/true, &env);
    Result<size_t> size = EncodedEnvelopeSize(env);
    ASSERT_TRUE(size.ok());
    largest = std::max(largest, *size);
  }
  // The generated bound assumes a 5-byte varint for `version`, which is 1.
  EXPECT_EQ(largest + 4, static_cast<size_t>(nodefl_wire_Envelope_size));
  EXPECT_LE(largest + kFrameHeaderBytes, kMaxFrameBytes);
}

TEST(WireEnvelopeTest, RandomEnvelopesRoundTrip) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(13).ok());
  static nodefl_wire_Envelope in, out;
  static uint8_t payload[kMaxFramePayloadBytes];
  for (int i = 0; i < 2000; ++i) {
    const pb_size_t tag = kAllBodies[rng.UniformBelow(std::size(kAllBodies))];
    FillEnvelope(tag, rng, /*max=*/false, &in);
    Result<size_t> size = EncodeEnvelope(in, payload);
    ASSERT_TRUE(size.ok());
    ASSERT_TRUE(DecodeEnvelope(ConstByteSpan(payload, *size), &out).ok());
    ASSERT_TRUE(SameEnvelope(in, out)) << "iteration " << i;
  }
}

TEST(WireEnvelopeTest, EncodingIsStandardProtobuf) {
  // What another protobuf implementation would produce for
  //   {version: 1, seq: 5, hello: {device_id: 7, software: "x"}}.
  const Proto expected =
      Proto().U(1, kProtocolVersion).U(2, 5).Msg(10, Proto().U(1, 7).Bytes(5, {'x'}));
  static nodefl_wire_Envelope env;
  InitEnvelope(&env, nodefl_wire_Envelope_hello_tag, 5);
  env.body.hello.device_id = 7;
  EXPECT_TRUE(SetString(env.body.hello.software, "x"));
  uint8_t out[64];
  Result<size_t> size = EncodeEnvelope(env, out);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(std::vector<uint8_t>(out, out + *size), expected.bytes());

  static nodefl_wire_Envelope decoded;
  ASSERT_TRUE(Decode(expected, &decoded).ok());
  EXPECT_TRUE(SameEnvelope(env, decoded));
}

TEST(WireEnvelopeTest, WrongVersionIsFailedPrecondition) {
  static nodefl_wire_Envelope env;
  const Proto heartbeat = Proto().U(1, 1);
  // Version 1 (before per-job ephemeral keys) and a future version 3.
  EXPECT_EQ(Decode(Proto().U(1, 1).U(2, 1).Msg(12, heartbeat), &env), Status::FailedPrecondition());
  EXPECT_EQ(env.version, 1u);
  EXPECT_EQ(Decode(Proto().U(1, 3).U(2, 1).Msg(12, heartbeat), &env), Status::FailedPrecondition());
  EXPECT_EQ(env.version, 3u);
  // Version absent (0) in an otherwise valid envelope.
  EXPECT_EQ(Decode(Proto().U(2, 1).Msg(12, heartbeat), &env), Status::FailedPrecondition());
  // The version is judged before the body.
  EXPECT_EQ(Decode(Proto().U(1, 9).U(2, 1), &env), Status::FailedPrecondition());
}

TEST(WireEnvelopeTest, UnknownOrMissingBodyIsUnimplemented) {
  static nodefl_wire_Envelope env;
  // Field 99 (a future oneof member) is skipped by protobuf: no body left.
  const Proto future = Proto().U(1, kProtocolVersion).U(2, 3).Msg(99, Proto().U(1, 1));
  Status s = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(s = Decode(future, &env));
  EXPECT_EQ(s, Status::Unimplemented());
  EXPECT_EQ(env.which_body, 0);
  EXPECT_EQ(env.seq, 3u);  // the header is still there for the Error's offending_seq
  EXPECT_STREQ(BodyName(env.which_body), "none");
  // Other unknown wire types in the oneof range, and no body at all.
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).U(60, 5), &env), Status::Unimplemented());
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).Tag(77, 5).Raw({1, 2, 3, 4}), &env), Status::Unimplemented());
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).U(2, 1), &env), Status::Unimplemented());
  // An unknown field next to a known body is ignored (forward compatibility).
  EXPECT_TRUE(Decode(Proto().U(1, kProtocolVersion).U(5, 42).Msg(12, Proto().U(1, 3)).U(98, 1), &env).ok());
  EXPECT_EQ(env.which_body, nodefl_wire_Envelope_heartbeat_tag);
  EXPECT_EQ(env.body.heartbeat.sent_at_us, 3u);
}

TEST(WireEnvelopeTest, MalformedBytesAreDataLoss) {
  static nodefl_wire_Envelope env;
  const std::vector<std::vector<uint8_t>> garbage = {
      {},                                    // empty
      {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},  // varint > 10 bytes
      {0x08},                                // truncated varint
      {0x08, 0x01, 0x52, 0x10, 0x08},        // submessage longer than the buffer
      {0x08, 0x01, 0x0f},                    // wire type 7 does not exist
      {0x08, 0x01, 0x00},                    // field number 0 (nanopb: "end of message")
      {0x08, 0x01, 0x00, 0x10, 0x05},        // ... with more after it
      {0x08, 0x01, 0x62, 0x03, 0x00, 0x08, 0x05},  // field 0 inside the body, then more
      {0x08, 0x01, 0x62, 0x01, 0x0b},        // group start (wire type 3) inside the body
      {0x08, 0x01, 0x52},                    // truncated length
      {0x08, 0x01, 0x0a, 0x01, 0x02},        // version sent as bytes (wrong wire type)
  };
  for (const auto& g : garbage) {
    Status s = Status::Unknown();
    NODEFL_EXPECT_NO_HEAP(s = DecodeEnvelope(ConstByteSpan(g.data(), g.size()), &env));
    EXPECT_EQ(s, Status::DataLoss()) << "input of " << g.size() << " bytes";
  }
}

TEST(WireEnvelopeTest, FieldsAboveTheirBoundsAreDataLoss) {
  static nodefl_wire_Envelope env;
  const std::vector<uint8_t> sealed(kMaxSealedBytes + 1, 0xab);
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).Msg(30, Proto().U(1, 2).Bytes(2, sealed)), &env), Status::DataLoss());
  const std::vector<uint8_t> ok_sealed(kMaxSealedBytes, 0xab);
  EXPECT_TRUE(Decode(Proto().U(1, kProtocolVersion).Msg(30, Proto().U(1, 2).Bytes(2, ok_sealed)), &env).ok());

  const std::vector<uint8_t> software(kMaxSoftwareChars + 1, 'a');  // no room for the NUL
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).Msg(10, Proto().Bytes(5, software)), &env), Status::DataLoss());

  Proto ids;
  for (size_t i = 0; i <= kMaxPeerKeyRequestIds; ++i) ids.U(1, i);
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).Msg(20, ids), &env), Status::DataLoss());

  const std::vector<uint8_t> token(kMaxResumeTokenBytes + 1, 1);
  EXPECT_EQ(Decode(Proto().U(1, kProtocolVersion).Msg(11, Proto().Bytes(1, token)), &env), Status::DataLoss());
}

TEST(WireEnvelopeTest, EncodingRefusesWhatCannotBeSent) {
  static nodefl_wire_Envelope env;
  uint8_t out[kMaxFramePayloadBytes];
  InitEnvelope(&env, nodefl_wire_Envelope_relay_send_tag);
  env.body.relay_send.sealed.size = kMaxSealedBytes + 1;  // above capacity
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());

  InitEnvelope(&env, nodefl_wire_Envelope_goodbye_tag);
  std::memset(env.body.goodbye.reason, 'a', sizeof(env.body.goodbye.reason));  // unterminated
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());

  InitEnvelope(&env, nodefl_wire_Envelope_peer_key_request_tag);
  env.body.peer_key_request.device_ids_count = kMaxPeerKeyRequestIds + 1;
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());

  InitEnvelope(&env, nodefl_wire_Envelope_heartbeat_tag);
  env.version = kProtocolVersion + 1;
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());
  env.version = kProtocolVersion;
  env.which_body = 99;
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());
  env.which_body = 0;
  EXPECT_EQ(EncodeEnvelope(env, out).status(), Status::InvalidArgument());

  InitEnvelope(&env, nodefl_wire_Envelope_heartbeat_tag, 1);
  env.body.heartbeat.sent_at_us = UINT64_MAX;
  uint8_t small[4];
  EXPECT_EQ(EncodeEnvelope(env, small).status(), Status::ResourceExhausted());
}

TEST(WireEnvelopeTest, BodyNamesAndDirections) {
  EXPECT_STREQ(BodyName(nodefl_wire_Envelope_hello_tag), "hello");
  EXPECT_STREQ(BodyName(nodefl_wire_Envelope_relay_deliver_tag), "relay_deliver");
  EXPECT_STREQ(BodyName(nodefl_wire_Envelope_chunk_tag), "chunk");
  EXPECT_STREQ(BodyName(0), "none");
  EXPECT_STREQ(BodyName(99), "unknown");
  for (const pb_size_t tag : kAllBodies) {
    EXPECT_TRUE(IsKnownBody(tag));
    EXPECT_STRNE(BodyName(tag), "unknown");
    EXPECT_TRUE(MaySend(Peer::kDevice, tag) || MaySend(Peer::kServer, tag)) << BodyName(tag);
  }
  EXPECT_FALSE(IsKnownBody(0));
  EXPECT_FALSE(IsKnownBody(15));
  EXPECT_TRUE(MaySend(Peer::kDevice, nodefl_wire_Envelope_hello_tag));
  EXPECT_FALSE(MaySend(Peer::kServer, nodefl_wire_Envelope_hello_tag));
  EXPECT_TRUE(MaySend(Peer::kServer, nodefl_wire_Envelope_relay_deliver_tag));
  EXPECT_FALSE(MaySend(Peer::kDevice, nodefl_wire_Envelope_relay_deliver_tag));
  EXPECT_TRUE(MaySend(Peer::kDevice, nodefl_wire_Envelope_error_tag));
  EXPECT_TRUE(MaySend(Peer::kServer, nodefl_wire_Envelope_error_tag));
  // Chunked transfers go both ways: public artefacts down, job uploads up.
  EXPECT_TRUE(MaySend(Peer::kDevice, nodefl_wire_Envelope_chunk_tag));
  EXPECT_TRUE(MaySend(Peer::kServer, nodefl_wire_Envelope_chunk_header_tag));
  EXPECT_FALSE(MaySend(Peer::kDevice, 99));
}

TEST(WireEnvelopeTest, InitHelpers) {
  static nodefl_wire_Envelope env;
  std::memset(&env, 0x5a, sizeof(env));
  InitEnvelope(&env, nodefl_wire_Envelope_relay_ack_tag, 7, 8, 9);
  EXPECT_EQ(env.version, kProtocolVersion);
  EXPECT_EQ(env.seq, 7u);
  EXPECT_EQ(env.job_id, 8u);
  EXPECT_EQ(env.round, 9u);
  EXPECT_EQ(env.which_body, nodefl_wire_Envelope_relay_ack_tag);
  EXPECT_EQ(env.body.relay_ack.relay_id, 0u);

  char long_message[200];
  std::memset(long_message, 'e', sizeof(long_message) - 1);
  long_message[sizeof(long_message) - 1] = '\0';
  InitError(&env, StatusCode::kDataLoss, long_message, 41, 3);
  EXPECT_EQ(env.which_body, nodefl_wire_Envelope_error_tag);
  EXPECT_EQ(env.body.error.code, static_cast<uint32_t>(StatusCode::kDataLoss));
  EXPECT_EQ(std::strlen(env.body.error.message), kMaxErrorMessageChars);
  EXPECT_EQ(env.body.error.offending_seq, 41u);
  uint8_t out[256];
  EXPECT_TRUE(EncodeEnvelope(env, out).ok());
  InitError(&env, StatusCode::kUnimplemented, nullptr, 0);
  EXPECT_STREQ(env.body.error.message, "");
}

TEST(WireEnvelopeTest, SetStringTruncatesAtCharacterBoundaries) {
  char s[5];
  EXPECT_TRUE(SetString(s, "abcd"));
  EXPECT_STREQ(s, "abcd");
  EXPECT_FALSE(SetString(s, "abcde"));
  EXPECT_STREQ(s, "abcd");
  // "ab" + U+00E9 (2 bytes) + "x": the 4-byte limit falls after the é.
  EXPECT_FALSE(SetString(s, "ab\xc3\xa9x"));
  EXPECT_STREQ(s, "ab\xc3\xa9");
  // "abc" + U+00E9: cutting after 4 bytes would split the é; drop it whole.
  EXPECT_FALSE(SetString(s, "abc\xc3\xa9"));
  EXPECT_STREQ(s, "abc");
  // A 4-byte character (U+1F600) right at the start of the cut.
  EXPECT_FALSE(SetString(s, "a\xf0\x9f\x98\x80"));
  EXPECT_STREQ(s, "a");
  EXPECT_TRUE(SetString(s, nullptr));
  EXPECT_STREQ(s, "");
}

TEST(WireEnvelopeTest, BytesHelpers) {
  nodefl_wire_Hello_resume_token_t token = {};
  uint8_t data[kMaxResumeTokenBytes + 1];
  for (size_t i = 0; i < sizeof(data); ++i) data[i] = static_cast<uint8_t>(i);
  EXPECT_TRUE(SetBytes(&token, ConstByteSpan(data, kMaxResumeTokenBytes)).ok());
  EXPECT_EQ(token.size, kMaxResumeTokenBytes);
  EXPECT_EQ(BytesOf(token).size(), kMaxResumeTokenBytes);
  EXPECT_EQ(BytesOf(token)[31], 31);
  EXPECT_EQ(SetBytes(&token, data), Status::ResourceExhausted());
  EXPECT_EQ(token.size, kMaxResumeTokenBytes);  // unchanged
  token.size = 1000;                              // corrupt: clamped, never read past the field
  EXPECT_EQ(BytesOf(token).size(), kMaxResumeTokenBytes);
  EXPECT_TRUE(SetBytes(&token, {}).ok());
  EXPECT_TRUE(BytesOf(token).empty());
}

TEST(WireEnvelopeTest, UnknownJobKindsSurviveDecodingAsNumbers) {
  static nodefl_wire_Envelope env;
  ASSERT_TRUE(Decode(Proto().U(1, kProtocolVersion).Msg(40, Proto().U(1, 77).U(2, 1000)), &env).ok());
  EXPECT_EQ(EnumValue(env.body.job_start.kind), 77u);
  EXPECT_FALSE(IsKnownJobKind(EnumValue(env.body.job_start.kind)));
  EXPECT_TRUE(IsKnownJobKind(nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO));
  EXPECT_TRUE(IsKnownJobKind(nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT));
  EXPECT_FALSE(IsKnownJobKind(nodefl_wire_JobKind_JOB_KIND_UNSPECIFIED));
}

TEST(WireEnvelopeTest, NanopbRuntimeMatchesTheHeaders) {
  // The runtime archive is prebuilt (Debian libnanopb-dev); these would go
  // wrong if it had been built with PB_FIELD_32BIT or PB_NO_ERRMSG while the
  // SDK compiles without them.
  static_assert(sizeof(pb_size_t) == 2);
  const uint8_t bad[] = {0x08, 0x01, 0x0f};
  pb_istream_t stream = pb_istream_from_buffer(bad, sizeof(bad));
  static nodefl_wire_Envelope env;
  EXPECT_FALSE(pb_decode(&stream, nodefl_wire_Envelope_fields, &env));
  ASSERT_NE(stream.errmsg, nullptr);
  EXPECT_STRNE(stream.errmsg, "");
  // A bytes field's pb_size_t length sits right before its data: a width
  // mismatch would garble this round trip.
  InitEnvelope(&env, nodefl_wire_Envelope_chunk_tag, 1);
  const uint8_t data[] = {0x11, 0x22, 0x33};
  ASSERT_TRUE(SetBytes(&env.body.chunk.data, data).ok());
  uint8_t out[64];
  Result<size_t> size = EncodeEnvelope(env, out);
  ASSERT_TRUE(size.ok());
  static nodefl_wire_Envelope back;
  ASSERT_TRUE(DecodeEnvelope(ConstByteSpan(out, *size), &back).ok());
  EXPECT_EQ(back.body.chunk.data.size, 3u);
  EXPECT_EQ(back.body.chunk.data.bytes[2], 0x33);
}

}  // namespace
}  // namespace nodefl::protocol
