// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// StreamingChunkSender: a device's chunked upload of an artefact that is
// never held in memory as a whole. protocol::ChunkSender needs the finished
// artefact; a FedWalk ordered degree matrix (Eq. 5) of 3,992 neighbours x 9
// bins is 144 KB, far beyond a small device's RAM, yet every byte of it can
// be recomputed on demand from data the device keeps anyway. So the artefact
// is described by a Producer that fills any byte range, and the sender calls
// it twice per byte: once to hash (the ChunkHeader carries the SHA-256 of the
// whole artefact, so it must be known before the first chunk), once to fill
// the chunks.
//
// On the wire the result is indistinguishable from protocol::ChunkSender over the
// materialised bytes (same header, same chunk cuts), so the server receives
// it with an ordinary protocol::ChunkReceiver.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::fedwalk {

class StreamingChunkSender {
 public:
  // Fills `out` with bytes [offset, offset + out.size()) of the artefact.
  // Must be deterministic: both passes must see the same bytes, or the
  // receiver rejects the transfer (digest mismatch, kDataLoss there).
  using Producer = void (*)(void* context, uint64_t offset, ByteSpan out);

  // An empty sender: MakeHeader() refuses it (kFailedPrecondition).
  StreamingChunkSender() = default;
  // `transfer_id` non-zero and unique per connection; `chunk_bytes` in
  // [1, protocol::kMaxChunkDataBytes]. Checked by MakeHeader(). `context` must
  // stay valid, and the data behind it unchanged, until the last chunk.
  StreamingChunkSender(uint64_t total_bytes, Producer producer, void* context, uint64_t transfer_id,
                       uint32_t artefact_kind, size_t chunk_bytes = protocol::kMaxChunkDataBytes);

  // Hashes the whole artefact through `scratch` (pieces of at most
  // min(scratch.size(), chunk_bytes); a larger scratch means fewer producer
  // calls) and fills the header. Rewinds to chunk 0. `scratch` may overlap
  // `*out` (e.g. the chunk data of the very envelope the header goes into):
  // the digest is complete before `*out` is written.
  //   kFailedPrecondition  an empty sender (no producer)
  //   kInvalidArgument     zero transfer id, chunk size out of range, more
  //                        than 2^32-1 chunks, or an empty scratch for a
  //                        non-empty artefact
  //   kInternal            hashing failed
  Status MakeHeader(nodefl_wire_ChunkHeader* out, ByteSpan scratch);

  // Fills the next chunk and returns true, or false once all chunks were
  // produced. kFailedPrecondition before a successful MakeHeader().
  Result<bool> NextChunk(nodefl_wire_Chunk* out);

  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t transfer_id() const { return transfer_id_; }
  uint32_t chunk_count() const { return chunk_count_; }
  uint32_t next_index() const { return next_index_; }
  bool header_made() const { return header_made_; }
  bool done() const { return header_made_ && next_index_ == chunk_count_; }

 private:
  uint64_t total_bytes_ = 0;
  Producer producer_ = nullptr;
  void* context_ = nullptr;
  uint64_t transfer_id_ = 0;
  uint32_t artefact_kind_ = 0;
  size_t chunk_bytes_ = protocol::kMaxChunkDataBytes;
  uint32_t chunk_count_ = 0;
  uint32_t next_index_ = 0;
  bool header_made_ = false;
};

}  // namespace nodefl::fedwalk
