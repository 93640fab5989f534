// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/chunk.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "heap_counter.h"
#include "nodefl/random/drbg.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"

namespace nodefl::protocol {
namespace {

// A sink writing into a preallocated buffer and checking that pieces are
// contiguous.
struct BufferSink {
  std::vector<uint8_t> data;
  uint64_t next_offset = 0;
  uint64_t fail_at = UINT64_MAX;  // refuse pieces starting at or after this

  static Status Write(void* ctx, uint64_t offset, ConstByteSpan piece) {
    auto* self = static_cast<BufferSink*>(ctx);
    if (offset != self->next_offset) return Status::Internal();
    if (offset >= self->fail_at) return Status::ResourceExhausted();
    if (offset + piece.size() > self->data.size()) return Status::OutOfRange();
    std::memcpy(self->data.data() + offset, piece.data(), piece.size());
    self->next_offset += piece.size();
    return Status::Ok();
  }
};

std::vector<uint8_t> Artefact(size_t size, uint64_t seed) {
  Drbg rng;
  EXPECT_TRUE(rng.SeedDeterministic(seed).ok());
  std::vector<uint8_t> a(size);
  EXPECT_TRUE(rng.Fill(a).ok());
  return a;
}

// Everything a sender produces for one artefact.
struct Transfer {
  nodefl_wire_ChunkHeader header;
  std::vector<nodefl_wire_Chunk> chunks;
};

Transfer Cut(const std::vector<uint8_t>& artefact, uint64_t id, size_t chunk_bytes = kMaxChunkDataBytes) {
  Transfer t;
  ChunkSender sender(artefact, id, 7, chunk_bytes);
  EXPECT_TRUE(sender.MakeHeader(&t.header).ok());
  while (true) {
    static nodefl_wire_Chunk chunk;
    Result<bool> more = sender.NextChunk(&chunk);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    t.chunks.push_back(chunk);
  }
  return t;
}

TEST(WireChunkTest, Sha256KnownAnswer) {
  const uint8_t abc[] = {'a', 'b', 'c'};
  uint8_t digest[kSha256Bytes];
  ASSERT_TRUE(Sha256(abc, digest).ok());
  const uint8_t expected[] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                              0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                              0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  EXPECT_EQ(std::memcmp(digest, expected, kSha256Bytes), 0);
  uint8_t short_digest[31];
  EXPECT_EQ(Sha256(abc, short_digest), Status::InvalidArgument());
}

TEST(WireChunkTest, HundredKilobytesThroughFramesAndEnvelopes) {
  const std::vector<uint8_t> artefact = Artefact(100 * 1024, 1);
  BufferSink sink;
  sink.data.resize(artefact.size());
  ChunkReceiver receiver(&BufferSink::Write, &sink, 1 << 20);
  ChunkSender sender(artefact, /*transfer_id=*/42, /*artefact_kind=*/3);

  static nodefl_wire_Envelope out_env, in_env;
  static uint8_t wire[kMaxFrameBytes];
  static uint8_t storage[FrameDecoder::StorageBytes()];
  FrameDecoder decoder(storage);
  size_t frames = 0;

  // Sender side: envelope -> frame; receiver side: frame -> envelope -> receiver.
  auto ship = [&](pb_size_t tag) {
    out_env.version = kProtocolVersion;
    out_env.seq = ++frames;
    out_env.which_body = tag;
    Result<size_t> n = EncodeFrame(out_env, wire);
    ASSERT_TRUE(n.ok());
    size_t consumed = 0;
    ASSERT_TRUE(decoder.Feed(ConstByteSpan(wire, *n), &consumed).ok());
    ASSERT_TRUE(decoder.has_frame());
    ASSERT_TRUE(DecodeEnvelope(decoder.frame(), &in_env).ok());
    decoder.PopFrame();
    if (in_env.which_body == nodefl_wire_Envelope_chunk_header_tag) {
      ASSERT_TRUE(receiver.OnHeader(in_env.body.chunk_header).ok());
    } else {
      ASSERT_TRUE(receiver.OnChunk(in_env.body.chunk).ok());
    }
  };

  InitEnvelope(&out_env, nodefl_wire_Envelope_chunk_header_tag);
  Status made = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(made = sender.MakeHeader(&out_env.body.chunk_header));
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(out_env.body.chunk_header.total_bytes, artefact.size());
  EXPECT_EQ(out_env.body.chunk_header.chunk_count, 25u);
  EXPECT_EQ(out_env.body.chunk_header.artefact, 3u);
  NODEFL_EXPECT_NO_HEAP(ship(nodefl_wire_Envelope_chunk_header_tag));
  EXPECT_TRUE(receiver.receiving());
  EXPECT_EQ(receiver.artefact(), 3u);

  NODEFL_EXPECT_NO_HEAP({
    while (true) {
      Result<bool> more = sender.NextChunk(&out_env.body.chunk);
      ASSERT_TRUE(more.ok());
      if (!*more) break;
      ship(nodefl_wire_Envelope_chunk_tag);
    }
  });
  EXPECT_TRUE(sender.done());
  EXPECT_TRUE(receiver.complete());
  EXPECT_TRUE(receiver.status().ok());
  EXPECT_EQ(receiver.received_bytes(), artefact.size());
  EXPECT_EQ(sink.data, artefact);
  EXPECT_EQ(frames, 26u);
  // The sender keeps saying "done".
  Result<bool> after = sender.NextChunk(&out_env.body.chunk);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(*after);
}

TEST(WireChunkTest, UnevenAndSmallChunks) {
  for (size_t chunk_bytes : {size_t{1}, size_t{1000}, size_t{4095}, kMaxChunkDataBytes}) {
    for (size_t size : {size_t{1}, size_t{999}, size_t{4096}, size_t{12289}}) {
      SCOPED_TRACE(::testing::Message() << size << " bytes in chunks of " << chunk_bytes);
      if (size / chunk_bytes > 5000) continue;
      const std::vector<uint8_t> artefact = Artefact(size, size);
      const Transfer t = Cut(artefact, 9, chunk_bytes);
      EXPECT_EQ(t.header.chunk_count, ChunkCount(size, chunk_bytes));
      ASSERT_EQ(t.chunks.size(), t.header.chunk_count);
      BufferSink sink;
      sink.data.resize(size);
      ChunkReceiver receiver(&BufferSink::Write, &sink);
      ASSERT_TRUE(receiver.OnHeader(t.header).ok());
      for (const auto& c : t.chunks) ASSERT_TRUE(receiver.OnChunk(c).ok());
      EXPECT_TRUE(receiver.complete());
      EXPECT_EQ(sink.data, artefact);
    }
  }
}

TEST(WireChunkTest, EmptyArtefactCompletesWithTheHeader) {
  const std::vector<uint8_t> empty;
  const Transfer t = Cut(empty, 5);
  EXPECT_EQ(t.header.total_bytes, 0u);
  EXPECT_EQ(t.header.chunk_count, 0u);
  EXPECT_TRUE(t.chunks.empty());
  ChunkReceiver receiver;
  ASSERT_TRUE(receiver.OnHeader(t.header).ok());
  EXPECT_TRUE(receiver.complete());

  nodefl_wire_ChunkHeader wrong = t.header;
  wrong.sha256.bytes[0] ^= 1;
  ChunkReceiver other;
  EXPECT_EQ(other.OnHeader(wrong), Status::DataLoss());
  EXPECT_FALSE(other.complete());
}

class WireChunkErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    artefact_ = Artefact(10000, 2);  // chunks of 4096, 4096, 1808
    t_ = Cut(artefact_, 77);
    ASSERT_EQ(t_.chunks.size(), 3u);
    sink_.data.resize(artefact_.size());
  }
  std::vector<uint8_t> artefact_;
  Transfer t_;
  BufferSink sink_;
};

TEST_F(WireChunkErrorTest, OutOfOrderIsRejectedForGood) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
  Status s = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(s = r.OnChunk(t_.chunks[2]));
  EXPECT_EQ(s, Status::OutOfRange());
  EXPECT_EQ(r.status(), Status::OutOfRange());
  // Sticky: the right chunk no longer helps.
  EXPECT_EQ(r.OnChunk(t_.chunks[1]), Status::OutOfRange());
  EXPECT_EQ(r.OnHeader(t_.header), Status::OutOfRange());
  EXPECT_FALSE(r.complete());
  EXPECT_FALSE(r.receiving());
  // Reset allows a fresh transfer.
  r.Reset();
  sink_.next_offset = 0;
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  for (const auto& c : t_.chunks) ASSERT_TRUE(r.OnChunk(c).ok());
  EXPECT_TRUE(r.complete());
}

TEST_F(WireChunkErrorTest, StartingWithTheWrongIndex) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  EXPECT_EQ(r.OnChunk(t_.chunks[1]), Status::OutOfRange());
  EXPECT_EQ(sink_.next_offset, 0u);  // nothing reached the sink
}

TEST_F(WireChunkErrorTest, DuplicateIsRejected) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
  EXPECT_EQ(r.OnChunk(t_.chunks[0]), Status::OutOfRange());
  EXPECT_EQ(sink_.next_offset, 4096u);  // the duplicate was not written
}

TEST_F(WireChunkErrorTest, WrongTransferIdIsRejected) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  nodefl_wire_Chunk c = t_.chunks[0];
  c.transfer_id = 78;
  EXPECT_EQ(r.OnChunk(c), Status::InvalidArgument());
  EXPECT_EQ(sink_.next_offset, 0u);
}

TEST_F(WireChunkErrorTest, ExtraChunkAfterTheLastIsRejected) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  for (const auto& c : t_.chunks) ASSERT_TRUE(r.OnChunk(c).ok());
  ASSERT_TRUE(r.complete());
  nodefl_wire_Chunk extra = t_.chunks[2];
  extra.index = 3;
  EXPECT_EQ(r.OnChunk(extra), Status::OutOfRange());
  EXPECT_FALSE(r.complete());
  // A header announcing fewer chunks than the sender sends: the surplus one
  // has an index past the count.
  ChunkReceiver r2(&BufferSink::Write, &sink_);
  sink_.next_offset = 0;
  nodefl_wire_ChunkHeader h = t_.header;
  h.chunk_count = 2;
  h.total_bytes = 8192;
  ASSERT_TRUE(r2.OnHeader(h).ok());
  ASSERT_TRUE(r2.OnChunk(t_.chunks[0]).ok());
  EXPECT_EQ(r2.OnChunk(t_.chunks[1]), Status::DataLoss());  // completes with the wrong digest
}

TEST_F(WireChunkErrorTest, ShortAndLongTotalsAreDataLoss) {
  {  // the header promises one byte more than the chunks carry
    ChunkReceiver r(&BufferSink::Write, &sink_);
    nodefl_wire_ChunkHeader h = t_.header;
    h.total_bytes += 1;
    ASSERT_TRUE(r.OnHeader(h).ok());
    ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
    ASSERT_TRUE(r.OnChunk(t_.chunks[1]).ok());
    EXPECT_EQ(r.OnChunk(t_.chunks[2]), Status::DataLoss());
    EXPECT_FALSE(r.complete());
  }
  {  // ... one byte less: the last chunk overflows the total
    sink_.next_offset = 0;
    ChunkReceiver r(&BufferSink::Write, &sink_);
    nodefl_wire_ChunkHeader h = t_.header;
    h.total_bytes -= 1;
    ASSERT_TRUE(r.OnHeader(h).ok());
    ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
    ASSERT_TRUE(r.OnChunk(t_.chunks[1]).ok());
    EXPECT_EQ(r.OnChunk(t_.chunks[2]), Status::DataLoss());
  }
  {  // a short chunk early on that the remaining chunks cannot make up for
    sink_.next_offset = 0;
    ChunkReceiver r(&BufferSink::Write, &sink_);
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    nodefl_wire_Chunk c = t_.chunks[0];
    c.data.size = 100;
    EXPECT_EQ(r.OnChunk(c), Status::DataLoss());
    EXPECT_EQ(sink_.next_offset, 0u);
  }
  {  // an empty chunk
    sink_.next_offset = 0;
    ChunkReceiver r(&BufferSink::Write, &sink_);
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    nodefl_wire_Chunk c = t_.chunks[0];
    c.data.size = 0;
    EXPECT_EQ(r.OnChunk(c), Status::DataLoss());
  }
  {  // a size above the field's capacity (only in a hand-made struct)
    ChunkReceiver r(&BufferSink::Write, &sink_);
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    nodefl_wire_Chunk c = t_.chunks[0];
    c.data.size = kMaxChunkDataBytes + 1;
    EXPECT_EQ(r.OnChunk(c), Status::InvalidArgument());
  }
}

TEST_F(WireChunkErrorTest, DigestMismatchIsDataLossAtTheEnd) {
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  nodefl_wire_Chunk tampered = t_.chunks[1];
  tampered.data.bytes[1234] ^= 0x40;
  ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
  ASSERT_TRUE(r.OnChunk(tampered).ok());  // cannot be known yet
  Status s = Status::Unknown();
  NODEFL_EXPECT_NO_HEAP(s = r.OnChunk(t_.chunks[2]));
  EXPECT_EQ(s, Status::DataLoss());
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.status(), Status::DataLoss());
  EXPECT_EQ(sink_.next_offset, artefact_.size());  // provisional data did reach the sink
}

TEST_F(WireChunkErrorTest, InconsistentHeadersAreRejected) {
  auto check = [&](nodefl_wire_ChunkHeader h, Status expected, uint64_t max_total = UINT64_MAX) {
    ChunkReceiver r(nullptr, nullptr, max_total);
    EXPECT_EQ(r.OnHeader(h), expected);
    EXPECT_EQ(r.receiving(), expected.ok());
  };
  nodefl_wire_ChunkHeader h = t_.header;
  h.transfer_id = 0;
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.sha256.size = 31;
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.chunk_count = 0;  // but total_bytes > 0
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.total_bytes = 0;  // but chunk_count > 0
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.total_bytes = 2;  // 3 chunks cannot each carry a byte
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.total_bytes = 3 * kMaxChunkDataBytes + 1;  // 3 chunks cannot carry it
  check(h, Status::InvalidArgument());
  h = t_.header;
  h.chunk_count = UINT32_MAX;
  h.total_bytes = UINT64_MAX;
  check(h, Status::InvalidArgument());
  check(t_.header, Status::ResourceExhausted(), 9999);  // over the receiver's limit
  check(t_.header, Status::Ok(), 10000);
}

TEST_F(WireChunkErrorTest, SequencingErrors) {
  {  // a chunk before any header
    ChunkReceiver r;
    EXPECT_EQ(r.OnChunk(t_.chunks[0]), Status::FailedPrecondition());
  }
  {  // a second header during a transfer
    ChunkReceiver r;
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
    EXPECT_EQ(r.OnHeader(t_.header), Status::FailedPrecondition());
    EXPECT_EQ(r.OnChunk(t_.chunks[1]), Status::FailedPrecondition());
  }
  {  // a new transfer after a completed one is fine
    ChunkReceiver r;
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    for (const auto& c : t_.chunks) ASSERT_TRUE(r.OnChunk(c).ok());
    ASSERT_TRUE(r.complete());
    const Transfer next = Cut(Artefact(5000, 3), 78);
    ASSERT_TRUE(r.OnHeader(next.header).ok());
    EXPECT_FALSE(r.complete());
    EXPECT_EQ(r.transfer_id(), 78u);
    // A chunk of the finished transfer is not the next one of this one.
    EXPECT_EQ(r.OnChunk(t_.chunks[0]), Status::InvalidArgument());
  }
  {  // a chunk of another transfer after completion
    ChunkReceiver r;
    ASSERT_TRUE(r.OnHeader(t_.header).ok());
    for (const auto& c : t_.chunks) ASSERT_TRUE(r.OnChunk(c).ok());
    nodefl_wire_Chunk other = t_.chunks[0];
    other.transfer_id = 1000;
    EXPECT_EQ(r.OnChunk(other), Status::FailedPrecondition());
  }
}

TEST_F(WireChunkErrorTest, SinkErrorsFailTheTransfer) {
  sink_.fail_at = 4096;
  ChunkReceiver r(&BufferSink::Write, &sink_);
  ASSERT_TRUE(r.OnHeader(t_.header).ok());
  ASSERT_TRUE(r.OnChunk(t_.chunks[0]).ok());
  EXPECT_EQ(r.OnChunk(t_.chunks[1]), Status::ResourceExhausted());
  EXPECT_EQ(r.status(), Status::ResourceExhausted());
  EXPECT_EQ(r.OnChunk(t_.chunks[2]), Status::ResourceExhausted());
}

TEST(WireChunkSenderTest, ArgumentsAreChecked) {
  const std::vector<uint8_t> artefact(100, 1);
  nodefl_wire_ChunkHeader h;
  nodefl_wire_Chunk c;
  EXPECT_EQ(ChunkSender(artefact, 0, 1).MakeHeader(&h), Status::InvalidArgument());
  EXPECT_EQ(ChunkSender(artefact, 1, 1, 0).MakeHeader(&h), Status::InvalidArgument());
  EXPECT_EQ(ChunkSender(artefact, 1, 1, kMaxChunkDataBytes + 1).MakeHeader(&h), Status::InvalidArgument());
  ChunkSender sender(artefact, 1, 1, 30);
  EXPECT_EQ(sender.NextChunk(&c).status(), Status::FailedPrecondition());
  ASSERT_TRUE(sender.MakeHeader(&h).ok());
  EXPECT_EQ(sender.chunk_count(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    Result<bool> more = sender.NextChunk(&c);
    ASSERT_TRUE(more.ok());
    ASSERT_TRUE(*more);
    EXPECT_EQ(c.index, i);
    EXPECT_EQ(c.transfer_id, 1u);
    EXPECT_EQ(c.data.size, i < 3 ? 30u : 10u);
  }
  EXPECT_TRUE(sender.done());
  // MakeHeader rewinds.
  ASSERT_TRUE(sender.MakeHeader(&h).ok());
  EXPECT_EQ(sender.next_index(), 0u);
  EXPECT_FALSE(sender.done());
}

}  // namespace
}  // namespace nodefl::protocol
