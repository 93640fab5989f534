// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// StreamingChunkSender must be indistinguishable on the wire from
// protocol::ChunkSender over the materialised artefact, and the ordinary
// protocol::ChunkReceiver must accept what it sends.
#include "nodefl/fedwalk/streaming_upload.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "heap_counter.h"
#include "nodefl/protocol/chunk.h"

namespace nodefl::fedwalk {
namespace {

// A deterministic artefact defined by its bytes' positions, so it can be
// produced piecewise and materialised independently.
uint8_t ByteAt(uint64_t p) {
  uint64_t x = p * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x * 0xBF58476D1CE4E5B9ull >> 56);
}

struct Generated {
  uint64_t calls = 0;
  uint64_t max_piece = 0;
  static void Produce(void* ctx, uint64_t offset, ByteSpan out) {
    auto* self = static_cast<Generated*>(ctx);
    ++self->calls;
    if (out.size() > self->max_piece) self->max_piece = out.size();
    for (size_t i = 0; i < out.size(); ++i) out[i] = ByteAt(offset + i);
  }
};

std::vector<uint8_t> Materialise(uint64_t size) {
  std::vector<uint8_t> v(size);
  for (uint64_t i = 0; i < size; ++i) v[i] = ByteAt(i);
  return v;
}

void ExpectSameHeader(const nodefl_wire_ChunkHeader& a, const nodefl_wire_ChunkHeader& b) {
  EXPECT_EQ(a.transfer_id, b.transfer_id);
  EXPECT_EQ(a.artefact, b.artefact);
  EXPECT_EQ(a.total_bytes, b.total_bytes);
  EXPECT_EQ(a.chunk_count, b.chunk_count);
  ASSERT_EQ(a.sha256.size, b.sha256.size);
  EXPECT_EQ(std::memcmp(a.sha256.bytes, b.sha256.bytes, a.sha256.size), 0);
}

struct Case {
  uint64_t size;
  size_t chunk_bytes;
  size_t scratch_bytes;
};

TEST(StreamingUploadTest, MatchesChunkSenderAndIsAcceptedByChunkReceiver) {
  const Case cases[] = {
      {0, protocol::kMaxChunkDataBytes, 16},         {1, protocol::kMaxChunkDataBytes, 1},
      {4095, protocol::kMaxChunkDataBytes, 4096},   {4096, protocol::kMaxChunkDataBytes, 13},
      {4097, protocol::kMaxChunkDataBytes, 4096},   {3 * 4096 + 17, 1000, 7},
      {143'716, protocol::kMaxChunkDataBytes, 4096}, {999, 7, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "size " << c.size << " chunk " << c.chunk_bytes << " scratch "
                                    << c.scratch_bytes);
    const std::vector<uint8_t> bytes = Materialise(c.size);
    protocol::ChunkSender reference(bytes, 77, 4, c.chunk_bytes);
    nodefl_wire_ChunkHeader expected_header;
    ASSERT_TRUE(reference.MakeHeader(&expected_header).ok());

    Generated gen;
    StreamingChunkSender sender(c.size, &Generated::Produce, &gen, 77, 4, c.chunk_bytes);
    std::vector<uint8_t> scratch(c.scratch_bytes);
    nodefl_wire_ChunkHeader header;
    ASSERT_TRUE(sender.MakeHeader(&header, scratch).ok());
    ExpectSameHeader(header, expected_header);
    EXPECT_LE(gen.max_piece, c.scratch_bytes);  // hashing never writes past the scratch
    EXPECT_EQ(sender.chunk_count(), reference.chunk_count());

    std::vector<uint8_t> received(c.size);
    struct Sink {
      std::vector<uint8_t>* out;
      static Status Write(void* ctx, uint64_t offset, ConstByteSpan data) {
        auto* self = static_cast<Sink*>(ctx);
        std::memcpy(self->out->data() + offset, data.data(), data.size());
        return Status::Ok();
      }
    } sink{&received};
    protocol::ChunkReceiver receiver(&Sink::Write, &sink);
    ASSERT_TRUE(receiver.OnHeader(header).ok());

    nodefl_wire_Chunk mine, theirs;
    for (;;) {
      Result<bool> a = sender.NextChunk(&mine);
      Result<bool> b = reference.NextChunk(&theirs);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b);
      if (!*a) break;
      EXPECT_EQ(mine.transfer_id, theirs.transfer_id);
      EXPECT_EQ(mine.index, theirs.index);
      ASSERT_EQ(mine.data.size, theirs.data.size);
      EXPECT_EQ(std::memcmp(mine.data.bytes, theirs.data.bytes, mine.data.size), 0);
      ASSERT_TRUE(receiver.OnChunk(mine).ok());
    }
    EXPECT_TRUE(sender.done());
    EXPECT_TRUE(receiver.complete());
    EXPECT_EQ(received, bytes);
  }
}

TEST(StreamingUploadTest, ScratchMayBeTheHeadersOwnEnvelope) {
  // The role hashes through the chunk buffer of the envelope the header is
  // built in; the header must come out right regardless.
  const uint64_t size = 10'000;
  const std::vector<uint8_t> bytes = Materialise(size);
  protocol::ChunkSender reference(bytes, 5, 2);
  nodefl_wire_ChunkHeader expected;
  ASSERT_TRUE(reference.MakeHeader(&expected).ok());

  Generated gen;
  StreamingChunkSender sender(size, &Generated::Produce, &gen, 5, 2);
  nodefl_wire_Envelope env;
  std::memset(&env, 0xEE, sizeof(env));
  ASSERT_TRUE(sender.MakeHeader(&env.body.chunk_header, ByteSpan(env.body.chunk.data.bytes)).ok());
  ExpectSameHeader(env.body.chunk_header, expected);
}

TEST(StreamingUploadTest, RewindsOnEveryHeader) {
  Generated gen;
  StreamingChunkSender sender(9000, &Generated::Produce, &gen, 3, 2);
  uint8_t scratch[512];
  nodefl_wire_ChunkHeader h1, h2;
  nodefl_wire_Chunk chunk;
  ASSERT_TRUE(sender.MakeHeader(&h1, scratch).ok());
  ASSERT_TRUE(sender.NextChunk(&chunk).ok());
  ASSERT_TRUE(sender.NextChunk(&chunk).ok());
  EXPECT_EQ(sender.next_index(), 2u);
  ASSERT_TRUE(sender.MakeHeader(&h2, scratch).ok());
  EXPECT_EQ(sender.next_index(), 0u);
  ExpectSameHeader(h1, h2);
  Result<bool> more = sender.NextChunk(&chunk);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(chunk.index, 0u);
}

TEST(StreamingUploadTest, RefusesBadConfiguration) {
  Generated gen;
  uint8_t scratch[64];
  nodefl_wire_ChunkHeader h;
  nodefl_wire_Chunk chunk;
  StreamingChunkSender empty;
  EXPECT_EQ(empty.MakeHeader(&h, scratch), Status::FailedPrecondition());
  EXPECT_EQ(StreamingChunkSender(10, &Generated::Produce, &gen, 0, 1).MakeHeader(&h, scratch),
            Status::InvalidArgument());  // transfer id 0
  EXPECT_EQ(StreamingChunkSender(10, &Generated::Produce, &gen, 1, 1, 0).MakeHeader(&h, scratch),
            Status::InvalidArgument());
  EXPECT_EQ(StreamingChunkSender(10, &Generated::Produce, &gen, 1, 1, protocol::kMaxChunkDataBytes + 1)
                .MakeHeader(&h, scratch),
            Status::InvalidArgument());
  EXPECT_EQ(StreamingChunkSender(10, &Generated::Produce, &gen, 1, 1).MakeHeader(&h, ByteSpan()),
            Status::InvalidArgument());
  EXPECT_EQ(StreamingChunkSender(uint64_t{1} << 45, &Generated::Produce, &gen, 1, 1, 1)
                .MakeHeader(&h, scratch),
            Status::InvalidArgument());  // more than 2^32-1 chunks
  StreamingChunkSender no_header(10, &Generated::Produce, &gen, 1, 1);
  EXPECT_EQ(no_header.NextChunk(&chunk).status(), Status::FailedPrecondition());
}

TEST(StreamingUploadTest, NonDeterministicProducerIsCaughtByTheReceiver) {
  struct Drifting {
    int pass = 0;
    static void Produce(void* ctx, uint64_t offset, ByteSpan out) {
      auto* self = static_cast<Drifting*>(ctx);
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(offset + i + self->pass);
      if (offset + out.size() == 5000) ++self->pass;  // changes after each full pass
    }
  } drifting;
  StreamingChunkSender sender(5000, &Drifting::Produce, &drifting, 9, 1);
  uint8_t scratch[4096];
  nodefl_wire_ChunkHeader h;
  ASSERT_TRUE(sender.MakeHeader(&h, scratch).ok());
  protocol::ChunkReceiver receiver;
  ASSERT_TRUE(receiver.OnHeader(h).ok());
  nodefl_wire_Chunk chunk;
  Status last = Status::Ok();
  while (true) {
    Result<bool> more = sender.NextChunk(&chunk);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    last = receiver.OnChunk(chunk);
  }
  EXPECT_EQ(last, Status::DataLoss());
}

TEST(StreamingUploadTest, NeverAllocates) {
  Generated gen;
  StreamingChunkSender sender(20'000, &Generated::Produce, &gen, 11, 3);
  static nodefl_wire_Envelope env;
  size_t chunks = 0;
  NODEFL_EXPECT_NO_HEAP({
    sender.MakeHeader(&env.body.chunk_header, ByteSpan(env.body.chunk.data.bytes)).IgnoreError();
    while (true) {
      Result<bool> more = sender.NextChunk(&env.body.chunk);
      if (!more.ok() || !*more) break;
      ++chunks;
    }
  });
  EXPECT_EQ(chunks, 5u);
}

}  // namespace
}  // namespace nodefl::fedwalk
