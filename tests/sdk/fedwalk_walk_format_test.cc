// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The walk job's contract (walk_format.h): parameters, walk messages and
// JobData records round-trip, and every documented rejection happens. The
// expected bytes are written out by hand from the documented layouts, so a
// layout change cannot pass by changing encoder and decoder together.
#include "nodefl/protocol/fedwalk/walk_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace nodefl::fedwalk {
namespace {

WalkParameters Sample() {
  WalkParameters w;
  w.mode = PrivacyMode::kPaper;
  w.length = 40;
  w.p = 0.2;
  w.epsilon = 2.0;
  w.epsilon_per_encoding = 0.75;
  w.max_pending_walks = 32;
  for (int i = 0; i < 16; ++i) w.salt[i] = static_cast<uint8_t>(0xA0 + i);
  return w;
}

// Views of temporaries (Span binds lvalues only); valid for the full
// expression.
template <typename T>
Span<const T> View(const std::vector<T>& v) {
  return Span<const T>(v.data(), v.size());
}

std::vector<uint8_t> Encoded(const WalkParameters& w) {
  std::vector<uint8_t> out(kWalkParametersBytes, 0xEE);
  EXPECT_TRUE(EncodeWalkParameters(w, out).ok());
  return out;
}

TEST(WalkFormatTest, ParametersLayoutIsAsDocumented) {
  const std::vector<uint8_t> b = Encoded(Sample());
  ASSERT_EQ(b.size(), 56u);
  EXPECT_EQ(b[0], kWalkParametersVersion);
  EXPECT_EQ(b[1], 1);          // paper
  EXPECT_EQ(b[2], 40);         // l, LE
  EXPECT_EQ(b[3], 0);
  EXPECT_EQ(b[4], 32);         // max_pending_walks, LE
  EXPECT_EQ(b[5] | b[6] | b[7], 0);
  double p = 0;
  std::memcpy(&p, b.data() + 8, 8);  // the test host is little-endian
  EXPECT_EQ(p, 0.2);
  double e = 0;
  std::memcpy(&e, b.data() + 24, 8);
  EXPECT_EQ(e, 0.75);
  EXPECT_EQ(b[32], 0xA0);
  EXPECT_EQ(b[47], 0xAF);
  EXPECT_EQ(b[48], 0);  // predictor: tree, the byte reserved before it existed
  for (size_t i = 49; i < 56; ++i) EXPECT_EQ(b[i], 0) << i;  // reserved
  WalkParameters neighbours = Sample();
  neighbours.predictor = JumpPredictor::kNeighbours;
  EXPECT_EQ(Encoded(neighbours)[48], 1);
}

TEST(WalkFormatTest, ParametersRoundTrip) {
  const WalkParameters w = Sample();
  Result<WalkParameters> back = DecodeWalkParameters(View(Encoded(w)));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->mode, w.mode);
  EXPECT_EQ(back->length, w.length);
  EXPECT_EQ(back->p, w.p);
  EXPECT_EQ(back->epsilon, w.epsilon);
  EXPECT_EQ(back->epsilon_per_encoding, w.epsilon_per_encoding);
  EXPECT_EQ(back->max_pending_walks, w.max_pending_walks);
  EXPECT_EQ(std::memcmp(back->salt, w.salt, 16), 0);
  EXPECT_EQ(back->predictor, JumpPredictor::kTree);
  // Edges of the ranges are accepted.
  for (auto edit : std::vector<void (*)(WalkParameters&)>{
           [](WalkParameters& x) { x.length = 2; }, [](WalkParameters& x) { x.length = kMaxWalkLength; },
           [](WalkParameters& x) { x.p = 0.0; }, [](WalkParameters& x) { x.p = 1.0; },
           [](WalkParameters& x) { x.max_pending_walks = 1; },
           [](WalkParameters& x) { x.max_pending_walks = kMaxPendingWalks; },
           [](WalkParameters& x) { x.mode = PrivacyMode::kStrict; },
           [](WalkParameters& x) { x.predictor = JumpPredictor::kNeighbours; }}) {
    WalkParameters x = Sample();
    edit(x);
    Result<WalkParameters> decoded = DecodeWalkParameters(View(Encoded(x)));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded->predictor, x.predictor);
  }
}

TEST(WalkFormatTest, PredictorNames) {
  EXPECT_STREQ(JumpPredictorName(JumpPredictor::kTree), "tree");
  EXPECT_STREQ(JumpPredictorName(JumpPredictor::kNeighbours), "neighbours");
  EXPECT_STREQ(JumpPredictorName(static_cast<JumpPredictor>(7)), "?");
  EXPECT_EQ(ParseJumpPredictor("tree").value_or(JumpPredictor::kNeighbours), JumpPredictor::kTree);
  EXPECT_EQ(ParseJumpPredictor("neighbours").value_or(JumpPredictor::kTree), JumpPredictor::kNeighbours);
  EXPECT_FALSE(ParseJumpPredictor("neighbors").ok());
  EXPECT_FALSE(ParseJumpPredictor("").ok());
  EXPECT_FALSE(ParseJumpPredictor(nullptr).ok());
}

TEST(WalkFormatTest, ParametersOutOfRangeAreRefusedBothWays) {
  const std::vector<void (*)(WalkParameters&)> edits = {
      [](WalkParameters& x) { x.length = 1; },
      [](WalkParameters& x) { x.length = kMaxWalkLength + 1; },
      [](WalkParameters& x) { x.p = -0.01; },
      [](WalkParameters& x) { x.p = 1.01; },
      [](WalkParameters& x) { x.p = std::numeric_limits<double>::quiet_NaN(); },
      [](WalkParameters& x) { x.epsilon = 0.0; },
      [](WalkParameters& x) { x.epsilon = -1.0; },
      [](WalkParameters& x) { x.epsilon = std::numeric_limits<double>::infinity(); },
      [](WalkParameters& x) { x.epsilon_per_encoding = 0.0; },
      [](WalkParameters& x) { x.epsilon_per_encoding = std::numeric_limits<double>::quiet_NaN(); },
      [](WalkParameters& x) { x.max_pending_walks = 0; },
      [](WalkParameters& x) { x.max_pending_walks = kMaxPendingWalks + 1; },
      [](WalkParameters& x) { x.mode = static_cast<PrivacyMode>(2); },
      [](WalkParameters& x) { x.predictor = static_cast<JumpPredictor>(kMaxJumpPredictor + 1); },
  };
  const std::vector<uint8_t> good = Encoded(Sample());
  for (size_t i = 0; i < edits.size(); ++i) {
    WalkParameters x = Sample();
    edits[i](x);
    std::vector<uint8_t> out(kWalkParametersBytes);
    EXPECT_EQ(EncodeWalkParameters(x, out), Status::InvalidArgument()) << i;
    // The same value smuggled into valid bytes is refused by the decoder.
    std::vector<uint8_t> b = good;
    b[1] = static_cast<uint8_t>(x.mode);
    b[2] = static_cast<uint8_t>(x.length);
    b[3] = static_cast<uint8_t>(x.length >> 8);
    for (int k = 0; k < 4; ++k) b[4 + k] = static_cast<uint8_t>(x.max_pending_walks >> (8 * k));
    std::memcpy(b.data() + 8, &x.p, 8);
    std::memcpy(b.data() + 16, &x.epsilon, 8);
    std::memcpy(b.data() + 24, &x.epsilon_per_encoding, 8);
    b[48] = static_cast<uint8_t>(x.predictor);
    EXPECT_EQ(DecodeWalkParameters(b).status(), Status::InvalidArgument()) << i;
  }
  // Framing: size, version, reserved bytes.
  std::vector<uint8_t> b = good;
  b.pop_back();
  EXPECT_FALSE(DecodeWalkParameters(b).ok());
  b = good;
  b.push_back(0);
  EXPECT_FALSE(DecodeWalkParameters(b).ok());
  b = good;
  b[0] = 2;
  EXPECT_FALSE(DecodeWalkParameters(b).ok());
  b = good;
  b[50] = 1;
  EXPECT_FALSE(DecodeWalkParameters(b).ok());
  std::vector<uint8_t> short_out(kWalkParametersBytes - 1);
  EXPECT_EQ(EncodeWalkParameters(Sample(), short_out), Status::InvalidArgument());
}

TEST(WalkFormatTest, WalkMessageRoundTripAndBounds) {
  WalkHeader h;
  h.flags = kSelfEncodeFirst;
  h.remaining = 7;
  h.walk_id = 0x01020304;
  h.hops = 5;
  h.count = 3;
  EXPECT_EQ(WalkLength(h), 3u + 1 + 7);
  // Padded to WalkLength = 11 ids, whatever the count.
  EXPECT_EQ(PaddedWalkMessageBytes(h), WalkMessageBytes(11));
  std::vector<uint8_t> m(PaddedWalkMessageBytes(h));
  ASSERT_TRUE(EncodeWalkHeader(h, m).ok());
  const std::vector<uint8_t> want_header = {2, 0x01, 7, 0, 4, 3, 2, 1, 5, 0, 3, 0};
  EXPECT_EQ(std::vector<uint8_t>(m.begin(), m.begin() + 12), want_header);
  for (uint32_t i = 0; i < 3; ++i) {
    for (int k = 0; k < 4; ++k) m[12 + 4 * i + k] = static_cast<uint8_t>((100 + i) >> (8 * k));
  }
  Result<WalkHeader> back = DecodeWalkMessage(m);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->flags, h.flags);
  EXPECT_EQ(back->remaining, h.remaining);
  EXPECT_EQ(back->walk_id, h.walk_id);
  EXPECT_EQ(back->hops, h.hops);
  EXPECT_EQ(back->count, h.count);
  EXPECT_EQ(WalkIdAt(ConstByteSpan(m).subspan(12), 2), 102u);

  // Size must be the padded size exactly, the padding zero.
  std::vector<uint8_t> longer = m;
  longer.push_back(0);
  EXPECT_FALSE(DecodeWalkMessage(longer).ok());
  EXPECT_FALSE(DecodeWalkMessage(ConstByteSpan(m).first(m.size() - 4)).ok());
  EXPECT_FALSE(DecodeWalkMessage(ConstByteSpan(m).first(WalkMessageBytes(3))).ok());  // unpadded (version 1's size)
  EXPECT_FALSE(DecodeWalkMessage(ConstByteSpan(m).first(11)).ok());
  std::vector<uint8_t> dirty = m;
  dirty.back() = 1;
  EXPECT_FALSE(DecodeWalkMessage(dirty).ok());
  // Version, unknown flags, remaining 0, too long.
  std::vector<uint8_t> bad = m;
  bad[0] = 1;
  EXPECT_FALSE(DecodeWalkMessage(bad).ok());
  bad = m;
  bad[1] = 0x02;
  EXPECT_FALSE(DecodeWalkMessage(bad).ok());
  bad = m;
  bad[2] = 0;
  EXPECT_FALSE(DecodeWalkMessage(bad).ok());
  WalkHeader too_long = h;
  too_long.remaining = static_cast<uint16_t>(kMaxWalkLength - 3);  // 3 + 1 + 997 = 1001
  EXPECT_EQ(EncodeWalkHeader(too_long, m), Status::InvalidArgument());
  too_long.remaining = static_cast<uint16_t>(kMaxWalkLength - 4);
  EXPECT_TRUE(EncodeWalkHeader(too_long, m).ok());
  std::vector<uint8_t> tiny(11);
  EXPECT_EQ(EncodeWalkHeader(h, tiny), Status::InvalidArgument());
}

TEST(WalkFormatTest, StartWalksRoundTripAndRejections) {
  const std::vector<StartWalk> walks = {{7, 40}, {0xFFFFFFFF, 1}, {9, kMaxWalkLength}};
  std::vector<uint8_t> out(4 + 3 * 8);
  Result<size_t> n = EncodeStartWalks(walks, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 28u);
  const std::vector<uint8_t> first = {3, 0, 0, 0, 7, 0, 0, 0, 40, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + 12), first);
  Result<uint32_t> count = DecodeStartWalks(out);
  ASSERT_TRUE(count.ok());
  ASSERT_EQ(*count, 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(StartWalkAt(out, i).walk_id, walks[i].walk_id);
    EXPECT_EQ(StartWalkAt(out, i).length, walks[i].length);
  }
  // Encoder refusals.
  std::vector<uint8_t> big(4096);
  EXPECT_EQ(EncodeStartWalks({}, big).status(), Status::InvalidArgument());
  EXPECT_EQ(EncodeStartWalks(View(std::vector<StartWalk>{{1, 0}}), big).status(), Status::InvalidArgument());
  EXPECT_EQ(EncodeStartWalks(View(std::vector<StartWalk>{{1, kMaxWalkLength + 1}}), big).status(),
            Status::InvalidArgument());
  EXPECT_EQ(EncodeStartWalks(View(std::vector<StartWalk>(kMaxStartWalksPerRecord + 1, StartWalk{1, 5})), big).status(),
            Status::InvalidArgument());
  EXPECT_TRUE(EncodeStartWalks(View(std::vector<StartWalk>(kMaxStartWalksPerRecord, StartWalk{1, 5})), big).ok());
  EXPECT_EQ(EncodeStartWalks(walks, ByteSpan(out).first(27)).status(), Status::ResourceExhausted());
  // Decoder refusals.
  std::vector<uint8_t> bad = out;
  bad.push_back(0);
  EXPECT_FALSE(DecodeStartWalks(bad).ok());
  bad = out;
  bad[0] = 4;  // count beyond the bytes
  EXPECT_FALSE(DecodeStartWalks(bad).ok());
  bad = out;
  bad[0] = 0;
  EXPECT_FALSE(DecodeStartWalks(ConstByteSpan(bad).first(4)).ok());  // empty record
  bad = out;
  bad[8] = 0;  // length 0
  EXPECT_FALSE(DecodeStartWalks(bad).ok());
  bad = out;
  bad[10] = 1;  // reserved
  EXPECT_FALSE(DecodeStartWalks(bad).ok());
  EXPECT_FALSE(DecodeStartWalks(ConstByteSpan(out).first(3)).ok());
}

TEST(WalkFormatTest, WalkResultAndDroppedStartsRoundTrip) {
  std::vector<uint8_t> ids;
  for (uint32_t v : {5u, 6u, 70000u}) {
    for (int k = 0; k < 4; ++k) ids.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  const WalkResultHeader h{42, WalkOutcome::kDeadEnd, 9, 3};
  std::vector<uint8_t> out(12 + 12);
  Result<size_t> n = EncodeWalkResult(h, ids, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 24u);
  const std::vector<uint8_t> header = {42, 0, 0, 0, 1, 0, 9, 0, 3, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + 12), header);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 12, out.end()), ids);
  Result<WalkResultHeader> back = DecodeWalkResult(out);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->walk_id, 42u);
  EXPECT_EQ(back->outcome, WalkOutcome::kDeadEnd);
  EXPECT_EQ(back->hops, 9);
  EXPECT_EQ(back->count, 3);
  EXPECT_EQ(WalkIdAt(ConstByteSpan(out).subspan(12), 2), 70000u);

  EXPECT_EQ(EncodeWalkResult(WalkResultHeader{1, static_cast<WalkOutcome>(3), 0, 0}, {}, out).status(),
            Status::InvalidArgument());
  EXPECT_EQ(EncodeWalkResult(WalkResultHeader{1, WalkOutcome::kComplete, 0, 2}, ids, out).status(),
            Status::InvalidArgument());  // ids do not match count
  EXPECT_EQ(EncodeWalkResult(h, ids, ByteSpan(out).first(23)).status(), Status::ResourceExhausted());
  std::vector<uint8_t> bad = out;
  bad[4] = 3;
  EXPECT_FALSE(DecodeWalkResult(bad).ok());
  bad = out;
  bad[5] = 1;
  EXPECT_FALSE(DecodeWalkResult(bad).ok());
  bad = out;
  bad[11] = 1;
  EXPECT_FALSE(DecodeWalkResult(bad).ok());
  EXPECT_FALSE(DecodeWalkResult(ConstByteSpan(out).first(20)).ok());
  bad = out;
  bad.push_back(0);
  EXPECT_FALSE(DecodeWalkResult(bad).ok());
  // A result over the walk message it came from (the role encodes in place).
  std::vector<uint8_t> message(12 + 12, 0);
  std::memcpy(message.data() + 12, ids.data(), 12);
  ASSERT_TRUE(EncodeWalkResult(h, ConstByteSpan(message).subspan(12), message).ok());
  EXPECT_EQ(message, out);

  const std::vector<uint32_t> dropped = {3, 1, 4};
  std::vector<uint8_t> d(16);
  Result<size_t> dn = EncodeDroppedStarts(dropped, d);
  ASSERT_TRUE(dn.ok());
  EXPECT_EQ(*dn, 16u);
  Result<uint32_t> dc = DecodeDroppedStarts(d);
  ASSERT_TRUE(dc.ok());
  EXPECT_EQ(*dc, 3u);
  EXPECT_EQ(WalkIdAt(ConstByteSpan(d).subspan(4), 1), 1u);
  EXPECT_FALSE(DecodeDroppedStarts(ConstByteSpan(d).first(15)).ok());
  EXPECT_EQ(EncodeDroppedStarts({}, d).status(), Status::InvalidArgument());
  EXPECT_EQ(EncodeDroppedStarts(dropped, ByteSpan(d).first(15)).status(), Status::ResourceExhausted());
}

}  // namespace
}  // namespace nodefl::fedwalk
