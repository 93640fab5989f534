// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "heap_counter.h"
#include "nodefl/random/drbg.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"
#include "protocol_test_util.h"

namespace nodefl::protocol {
namespace {

using testing::FillEnvelope;
using testing::kAllBodies;
using testing::SameEnvelope;

std::vector<uint8_t> Frame(const nodefl_wire_Envelope& env) {
  std::vector<uint8_t> out(kMaxFrameBytes);
  Result<size_t> n = EncodeFrame(env, out);
  EXPECT_TRUE(n.ok()) << n.status().str();
  out.resize(n.ok() ? *n : 0);
  return out;
}

std::vector<uint8_t> Prefix(uint32_t length) {
  std::vector<uint8_t> p(kFrameHeaderBytes);
  WriteFrameLength(length, p);
  return p;
}

TEST(WireFrameTest, PrefixIsBigEndianPayloadLength) {
  static nodefl_wire_Envelope env;
  InitEnvelope(&env, nodefl_wire_Envelope_relay_send_tag, 1);
  env.body.relay_send.dst = 3;
  env.body.relay_send.sealed.size = 300;
  const std::vector<uint8_t> frame = Frame(env);
  ASSERT_GT(frame.size(), 300u);
  const size_t payload = frame.size() - kFrameHeaderBytes;
  EXPECT_EQ(frame[0], 0);
  EXPECT_EQ(frame[1], 0);
  EXPECT_EQ(frame[2], payload >> 8);
  EXPECT_EQ(frame[3], payload & 0xff);
  EXPECT_EQ(ReadFrameLength(frame), payload);
  Result<size_t> size = EncodedFrameSize(env);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, frame.size());
  const std::vector<uint8_t> prefix = Prefix(0x01020304u);
  EXPECT_EQ(ReadFrameLength(prefix), 0x01020304u);
  EXPECT_EQ(prefix, (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST(WireFrameTest, EveryBodyThroughTheDecoderOneByteAtATime) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(21).ok());
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  ASSERT_TRUE(decoder.status().ok());
  static nodefl_wire_Envelope in, out;
  for (const pb_size_t tag : kAllBodies) {
    SCOPED_TRACE(BodyName(tag));
    FillEnvelope(tag, rng, /*max=*/true, &in);
    const std::vector<uint8_t> frame = Frame(in);
    for (size_t i = 0; i < frame.size(); ++i) {
      ASSERT_FALSE(decoder.has_frame());
      size_t consumed = 0;
      Status s = Status::Unknown();
      NODEFL_EXPECT_NO_HEAP(s = decoder.Feed(ConstByteSpan(&frame[i], 1), &consumed));
      ASSERT_TRUE(s.ok());
      ASSERT_EQ(consumed, 1u);
      if (i + 1 < frame.size()) {
        EXPECT_EQ(decoder.buffered_bytes(), i + 1);
      }
    }
    ASSERT_TRUE(decoder.has_frame());
    EXPECT_EQ(decoder.frame().size(), frame.size() - kFrameHeaderBytes);
    EXPECT_EQ(decoder.raw_frame().size(), frame.size());
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), decoder.raw_frame().begin()));
    Status decoded = Status::Unknown();
    NODEFL_EXPECT_NO_HEAP(decoded = DecodeEnvelope(decoder.frame(), &out));
    ASSERT_TRUE(decoded.ok());
    EXPECT_TRUE(SameEnvelope(in, out));
    decoder.PopFrame();
    EXPECT_FALSE(decoder.has_frame());
    EXPECT_TRUE(decoder.frame().empty());
    EXPECT_TRUE(decoder.Finish().ok());
  }
}

TEST(WireFrameTest, ManyFramesInOneBufferStopAtEachFrame) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(22).ok());
  static nodefl_wire_Envelope in[64], out;
  std::vector<uint8_t> stream;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < std::size(in); ++i) {
    FillEnvelope(kAllBodies[i % std::size(kAllBodies)], rng, /*max=*/false, &in[i]);
    const std::vector<uint8_t> f = Frame(in[i]);
    sizes.push_back(f.size());
    stream.insert(stream.end(), f.begin(), f.end());
  }
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  ConstByteSpan rest(stream.data(), stream.size());
  size_t frames = 0;
  NODEFL_EXPECT_NO_HEAP({
    while (!rest.empty()) {
      size_t consumed = 0;
      ASSERT_TRUE(decoder.Feed(rest, &consumed).ok());
      rest = rest.subspan(consumed);
      ASSERT_TRUE(decoder.has_frame());
      ASSERT_EQ(consumed, sizes[frames]);  // stopped right after the frame
      // While a frame is pending, nothing more is taken.
      ASSERT_TRUE(decoder.Feed(rest, &consumed).ok());
      ASSERT_EQ(consumed, 0u);
      ASSERT_TRUE(DecodeEnvelope(decoder.frame(), &out).ok());
      EXPECT_TRUE(SameEnvelope(in[frames], out));
      decoder.PopFrame();
      ++frames;
    }
  });
  EXPECT_EQ(frames, std::size(in));
  EXPECT_TRUE(decoder.Finish().ok());
}

TEST(WireFrameTest, RandomSplitsOfAStream) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(23).ok());
  static nodefl_wire_Envelope in[40], out;
  std::vector<uint8_t> stream;
  for (auto& env : in) {
    FillEnvelope(kAllBodies[rng.UniformBelow(std::size(kAllBodies))], rng, false, &env);
    const std::vector<uint8_t> f = Frame(env);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  size_t pos = 0, frames = 0;
  while (pos < stream.size()) {
    size_t piece = std::min<size_t>(1 + rng.UniformBelow(3000), stream.size() - pos);
    ConstByteSpan chunk(stream.data() + pos, piece);
    while (!chunk.empty()) {
      size_t consumed = 0;
      ASSERT_TRUE(decoder.Feed(chunk, &consumed).ok());
      chunk = chunk.subspan(consumed);
      pos += consumed;
      if (decoder.has_frame()) {
        ASSERT_LT(frames, std::size(in));
        ASSERT_TRUE(DecodeEnvelope(decoder.frame(), &out).ok());
        EXPECT_TRUE(SameEnvelope(in[frames], out));
        decoder.PopFrame();
        ++frames;
      }
    }
  }
  EXPECT_EQ(frames, std::size(in));
}

TEST(WireFrameTest, OversizePrefixIsRejectedBeforeBuffering) {
  constexpr size_t kMax = 200;  // a device advertising less than the protocol maximum
  static uint8_t storage[FrameDecoder::StorageBytes(kMax) + 16];
  std::memset(storage, 0xaa, sizeof(storage));
  FrameDecoder decoder(ByteSpan(storage, FrameDecoder::StorageBytes(kMax)), kMax);
  ASSERT_TRUE(decoder.status().ok());
  EXPECT_EQ(decoder.max_payload(), kMax);

  std::vector<uint8_t> input = Prefix(kMax + 1);
  input.resize(input.size() + kMax + 1, 0x55);  // the payload the peer wants us to buffer
  size_t consumed = 0;
  Status s = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(s = decoder.Feed(input, &consumed));
  EXPECT_EQ(s, Status::ResourceExhausted());
  EXPECT_EQ(consumed, kFrameHeaderBytes);  // the prefix only
  for (size_t i = kFrameHeaderBytes; i < sizeof(storage); ++i) ASSERT_EQ(storage[i], 0xaa);
  EXPECT_FALSE(decoder.has_frame());

  // Sticky until Reset(): the stream position is lost.
  EXPECT_EQ(decoder.Feed(ConstByteSpan(input).subspan(consumed), &consumed), Status::ResourceExhausted());
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(decoder.status(), Status::ResourceExhausted());
  EXPECT_EQ(decoder.Finish(), Status::ResourceExhausted());
  decoder.Reset();
  EXPECT_TRUE(decoder.status().ok());

  // Exactly at the limit is fine; the largest prefix is refused too.
  std::vector<uint8_t> at_limit = Prefix(kMax);
  at_limit.resize(at_limit.size() + kMax, 0x01);
  ASSERT_TRUE(decoder.Feed(at_limit, &consumed).ok());
  EXPECT_EQ(consumed, at_limit.size());
  EXPECT_TRUE(decoder.has_frame());
  decoder.PopFrame();
  const std::vector<uint8_t> huge = Prefix(0xffffffffu);
  EXPECT_EQ(decoder.Feed(huge, &consumed), Status::ResourceExhausted());
}

TEST(WireFrameTest, OversizePrefixSplitAcrossFeeds) {
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  const std::vector<uint8_t> prefix = Prefix(kMaxFramePayloadBytes + 1);
  size_t consumed = 0;
  ASSERT_TRUE(decoder.Feed(ConstByteSpan(prefix).first(3), &consumed).ok());
  EXPECT_EQ(consumed, 3u);
  EXPECT_EQ(decoder.buffered_bytes(), 3u);
  EXPECT_EQ(decoder.Feed(ConstByteSpan(prefix).subspan(3), &consumed), Status::ResourceExhausted());
  EXPECT_EQ(consumed, 1u);
}

TEST(WireFrameTest, ZeroLengthIsDataLoss) {
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  std::vector<uint8_t> input = Prefix(0);
  input.push_back(0x08);
  size_t consumed = 0;
  EXPECT_EQ(decoder.Feed(input, &consumed), Status::DataLoss());
  EXPECT_EQ(consumed, kFrameHeaderBytes);
  EXPECT_FALSE(decoder.has_frame());
  EXPECT_EQ(decoder.Feed(input, &consumed), Status::DataLoss());
  EXPECT_EQ(consumed, 0u);
}

TEST(WireFrameTest, TruncatedFrameIsReportedAtEndOfStream) {
  static nodefl_wire_Envelope env;
  InitEnvelope(&env, nodefl_wire_Envelope_goodbye_tag, 1);
  EXPECT_TRUE(SetString(env.body.goodbye.reason, "bye"));
  const std::vector<uint8_t> frame = Frame(env);
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  EXPECT_TRUE(decoder.Finish().ok());  // nothing yet
  size_t consumed = 0;
  ASSERT_TRUE(decoder.Feed(ConstByteSpan(frame).first(frame.size() - 1), &consumed).ok());
  EXPECT_EQ(consumed, frame.size() - 1);
  EXPECT_FALSE(decoder.has_frame());
  EXPECT_EQ(decoder.buffered_bytes(), frame.size() - 1);
  EXPECT_EQ(decoder.Finish(), Status::DataLoss());
  // Only a partial prefix is a truncation too.
  decoder.Reset();
  ASSERT_TRUE(decoder.Feed(ConstByteSpan(frame).first(2), &consumed).ok());
  EXPECT_EQ(decoder.Finish(), Status::DataLoss());
  // A truncated payload handed to the codec is DATA_LOSS as well.
  static nodefl_wire_Envelope out;
  EXPECT_EQ(DecodeEnvelope(ConstByteSpan(frame).subspan(kFrameHeaderBytes, frame.size() - 5), &out),
            Status::DataLoss());
}

TEST(WireFrameTest, GarbagePayloadPassesFramingAndFailsDecoding) {
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  std::vector<uint8_t> input = Prefix(6);
  for (uint8_t b : {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) input.push_back(b);
  size_t consumed = 0;
  ASSERT_TRUE(decoder.Feed(input, &consumed).ok());
  ASSERT_TRUE(decoder.has_frame());
  static nodefl_wire_Envelope out;
  EXPECT_EQ(DecodeEnvelope(decoder.frame(), &out), Status::DataLoss());
}

TEST(WireFrameTest, ConfigurationIsChecked) {
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder unset;
  size_t consumed = 7;
  const uint8_t byte = 0;
  EXPECT_EQ(unset.Feed(ConstByteSpan(&byte, 1), &consumed), Status::FailedPrecondition());
  EXPECT_EQ(consumed, 0u);

  FrameDecoder decoder;
  EXPECT_EQ(decoder.Init(ByteSpan(storage, FrameDecoder::StorageBytes() - 1)), Status::InvalidArgument());
  EXPECT_EQ(decoder.Init(storage, 0), Status::InvalidArgument());
  EXPECT_EQ(decoder.Init(storage, kMaxFramePayloadBytes + 1), Status::InvalidArgument());
  decoder.Reset();  // does not make a bad configuration usable
  EXPECT_EQ(decoder.Feed(ConstByteSpan(&byte, 1), &consumed), Status::InvalidArgument());
  EXPECT_TRUE(decoder.Init(storage, 1).ok());
  EXPECT_TRUE(decoder.Init(storage).ok());
  FrameDecoder too_small(ByteSpan(storage, 10), 100);
  EXPECT_EQ(too_small.status(), Status::InvalidArgument());
}

TEST(WireFrameTest, EncodeFrameLimits) {
  static nodefl_wire_Envelope env;
  InitEnvelope(&env, nodefl_wire_Envelope_relay_send_tag, 1);
  env.body.relay_send.sealed.size = kMaxSealedBytes;
  static uint8_t out[kMaxFrameBytes];
  Result<size_t> full = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(full = EncodeFrame(env, out));
  ASSERT_TRUE(full.ok());

  // Above the peer's advertised limit.
  const size_t payload = *full - kFrameHeaderBytes;
  EXPECT_EQ(EncodeFrame(env, out, payload - 1).status(), Status::ResourceExhausted());
  EXPECT_TRUE(EncodeFrame(env, out, payload).ok());
  EXPECT_EQ(EncodedFrameSize(env, payload - 1).status(), Status::ResourceExhausted());

  // Output too small: nothing is written.
  std::memset(out, 0xcc, sizeof(out));
  EXPECT_EQ(EncodeFrame(env, ByteSpan(out, *full - 1)).status(), Status::OutOfRange());
  for (uint8_t b : out) ASSERT_EQ(b, 0xcc);

  // Not sendable at all.
  env.version = 0;
  EXPECT_EQ(EncodeFrame(env, out).status(), Status::InvalidArgument());
  InitEnvelope(&env, 0, 1);
  EXPECT_EQ(EncodeFrame(env, out).status(), Status::InvalidArgument());
}

TEST(WireFrameTest, PeerFrameLimit) {
  EXPECT_EQ(PeerFrameLimit(0), kMaxFramePayloadBytes);
  EXPECT_EQ(PeerFrameLimit(1000), 1000u);
  EXPECT_EQ(PeerFrameLimit(kMaxFramePayloadBytes), kMaxFramePayloadBytes);
  EXPECT_EQ(PeerFrameLimit(100000), kMaxFramePayloadBytes);
}

// Deterministic fuzzing of FrameDecoder + DecodeEnvelope: valid frames,
// mutated frames and random bytes, fed in random pieces. Properties: no
// crash or out-of-bounds access (run under ASan/UBSan to see the latter),
// only the documented status codes, no heap, and every envelope that decodes
// re-encodes to bytes that decode to the same envelope.
// NODEFL_PROTOCOL_FUZZ_ITERATIONS / NODEFL_PROTOCOL_FUZZ_SEED override the defaults
// (20000 / 0xF022) for longer local runs, e.g. in a sanitizer build.
TEST(WireFrameTest, FuzzDecoderAndCodec) {
  const char* iterations_env = std::getenv("NODEFL_PROTOCOL_FUZZ_ITERATIONS");
  const char* seed_env = std::getenv("NODEFL_PROTOCOL_FUZZ_SEED");
  const long kIterations = iterations_env != nullptr ? std::atol(iterations_env) : 20000;
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 0) : 0xF022).ok());

  // Seed corpus: one valid frame of each body, max-size and random.
  static nodefl_wire_Envelope env, again;
  std::vector<std::vector<uint8_t>> corpus;
  for (const pb_size_t tag : kAllBodies) {
    FillEnvelope(tag, rng, true, &env);
    corpus.push_back(Frame(env));
    FillEnvelope(tag, rng, false, &env);
    corpus.push_back(Frame(env));
  }

  static uint8_t storage[FrameDecoder::StorageBytes()];
  static uint8_t input[2 * kMaxFrameBytes + 64];
  static uint8_t reencoded[kMaxFrameBytes], reencoded2[kMaxFrameBytes];
  FrameDecoder decoder(storage);
  size_t frames = 0, decoded_ok = 0, framing_errors = 0, codes[17] = {};
  bool unexpected = false;

  const size_t heap_before = nodefl::testing::HeapAllocationCount();
  for (long it = 0; it < kIterations; ++it) {
    // Build one input.
    size_t n = 0;
    const std::vector<uint8_t>& base = corpus[rng.UniformBelow(corpus.size())];
    switch (rng.UniformBelow(6)) {
      case 0:  // random bytes
        n = rng.UniformBelow(sizeof(input));
        (void)rng.Fill(ByteSpan(input, n));
        break;
      case 1:  // random bytes behind a plausible prefix
        n = kFrameHeaderBytes + rng.UniformBelow(300);
        (void)rng.Fill(ByteSpan(input, n));
        WriteFrameLength(static_cast<uint32_t>(n - kFrameHeaderBytes), input);
        break;
      default: {  // a valid frame with mutations, sometimes two frames
        n = base.size();
        std::memcpy(input, base.data(), n);
        if (rng.Bernoulli(0.3)) {
          const std::vector<uint8_t>& second = corpus[rng.UniformBelow(corpus.size())];
          std::memcpy(input + n, second.data(), second.size());
          n += second.size();
        }
        const uint64_t mutations = rng.UniformBelow(6);
        for (uint64_t m = 0; m < mutations && n > 0; ++m) {
          const size_t at = rng.UniformBelow(n);
          switch (rng.UniformBelow(5)) {
            case 0: input[at] ^= static_cast<uint8_t>(1u << rng.UniformBelow(8)); break;
            case 1: input[at] = static_cast<uint8_t>(rng.NextU32()); break;
            case 2: n = at; break;  // truncate
            case 3:                 // delete a byte
              std::memmove(input + at, input + at + 1, n - at - 1);
              --n;
              break;
            default:  // insert a byte
              if (n < sizeof(input)) {
                std::memmove(input + at + 1, input + at, n - at);
                input[at] = static_cast<uint8_t>(rng.NextU32());
                ++n;
              }
          }
        }
        // Keep the length prefix consistent with the payload now and then,
        // so that mutated payloads reach the decoder.
        if (n >= kFrameHeaderBytes && n - kFrameHeaderBytes <= kMaxFramePayloadBytes &&
            rng.Bernoulli(0.5)) {
          WriteFrameLength(static_cast<uint32_t>(n - kFrameHeaderBytes), input);
        }
      }
    }

    // Feed it in random pieces.
    decoder.Reset();
    size_t pos = 0;
    while (pos < n) {
      const size_t piece = std::min<size_t>(n - pos, 1 + rng.UniformBelow(rng.Bernoulli(0.2) ? 8 : 2000));
      size_t consumed = 0;
      const Status fed = decoder.Feed(ConstByteSpan(input + pos, piece), &consumed);
      if (consumed > piece) unexpected = true;
      pos += consumed;
      if (!fed.ok()) {
        if (fed != Status::DataLoss() && fed != Status::ResourceExhausted()) unexpected = true;
        ++framing_errors;
        break;
      }
      if (!decoder.has_frame()) {
        if (consumed != piece) unexpected = true;
        continue;
      }
      ++frames;
      const ConstByteSpan payload = decoder.frame();
      if (payload.empty() || payload.size() > kMaxFramePayloadBytes) unexpected = true;
      const Status s = DecodeEnvelope(payload, &env);
      ++codes[static_cast<size_t>(s.code())];
      if (s.ok()) {
        ++decoded_ok;
        // decode(encode(decode(x))) == decode(x), and the encoding is stable.
        Result<size_t> r1 = EncodeFrame(env, reencoded);
        if (!r1.ok()) {
          unexpected = true;
        } else {
          const Status s2 = DecodeEnvelope(ConstByteSpan(reencoded, *r1).subspan(kFrameHeaderBytes), &again);
          Result<size_t> r2 = EncodeFrame(again, reencoded2);
          if (!s2.ok() || !r2.ok() || *r1 != *r2 || std::memcmp(reencoded, reencoded2, *r1) != 0 ||
              !SameEnvelope(env, again)) {
            unexpected = true;
          }
        }
      } else if (s != Status::DataLoss() && s != Status::FailedPrecondition() &&
                 s != Status::Unimplemented()) {
        unexpected = true;
      }
      decoder.PopFrame();
    }
    if (unexpected) {
      ADD_FAILURE() << "iteration " << it << " broke a property";
      break;
    }
  }
  EXPECT_EQ(nodefl::testing::HeapAllocationCount() - heap_before, 0u);
  EXPECT_FALSE(unexpected);
  if (kIterations >= 20000) {  // the mix exercises every outcome
    EXPECT_GT(decoded_ok, 1000u);
    EXPECT_GT(codes[static_cast<size_t>(StatusCode::kDataLoss)], 1000u);
    EXPECT_GT(codes[static_cast<size_t>(StatusCode::kFailedPrecondition)], 0u);
    EXPECT_GT(codes[static_cast<size_t>(StatusCode::kUnimplemented)], 0u);
    EXPECT_GT(framing_errors, 1000u);
  }
  RecordProperty("frames", static_cast<int>(frames));
  RecordProperty("decoded_ok", static_cast<int>(decoded_ok));
  RecordProperty("data_loss", static_cast<int>(codes[static_cast<size_t>(StatusCode::kDataLoss)]));
  RecordProperty("wrong_version",
                 static_cast<int>(codes[static_cast<size_t>(StatusCode::kFailedPrecondition)]));
  RecordProperty("unimplemented", static_cast<int>(codes[static_cast<size_t>(StatusCode::kUnimplemented)]));
  RecordProperty("framing_errors", static_cast<int>(framing_errors));
}

}  // namespace
}  // namespace nodefl::protocol
