// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Chunked transfer of one large public artefact (degree-vector dictionary,
// trees, codebooks, ...): a ChunkHeader announcing size, chunk count and the
// SHA-256 of the whole artefact, then Chunk 0, 1, ..., chunk_count-1 in
// order, each in its own envelope. Never one giant message: every frame stays
// within kMaxFramePayloadBytes and the receiver never needs the whole
// artefact in memory (its sink keeps only what it needs).
//
// Both sides are sans-IO and heap-free; SHA-256 is MbedTLS's (incremental on
// the receiver). docs/protocol.md, "Chunked transfers", has the rules.
#pragma once

#include <mbedtls/sha256.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::protocol {

// Computes SHA-256 of `data` into `digest` (kSha256Bytes). kInternal if
// MbedTLS fails.
Status Sha256(ConstByteSpan data, Span<uint8_t> digest);

// Number of chunks for `total_bytes` in pieces of `chunk_bytes` (>= 1).
constexpr uint64_t ChunkCount(uint64_t total_bytes, size_t chunk_bytes) {
  return total_bytes / chunk_bytes + (total_bytes % chunk_bytes != 0 ? 1 : 0);
}

// Cuts one artefact into a ChunkHeader and Chunks. The artefact must outlive
// the sender.
//
//   ChunkSender sender(artefact, transfer_id, kind);
//   NODEFL_TRY(sender.MakeHeader(&env.body.chunk_header));   // send it
//   while (true) {
//     NODEFL_TRY_ASSIGN(bool more, sender.NextChunk(&env.body.chunk));
//     if (!more) break;                                       // send it
//   }
class ChunkSender {
 public:
  // `transfer_id` must be non-zero and unique per connection; `chunk_bytes`
  // in [1, kMaxChunkDataBytes] (smaller chunks suit a peer that advertised a
  // small frame limit). Both are checked by MakeHeader().
  ChunkSender(ConstByteSpan artefact, uint64_t transfer_id, uint32_t artefact_kind,
              size_t chunk_bytes = kMaxChunkDataBytes);

  // Fills the header (and hashes the artefact). kInvalidArgument for a zero
  // transfer id, a chunk size out of range, or more than 2^32-1 chunks;
  // kInternal if hashing fails. Rewinds to chunk 0.
  Status MakeHeader(nodefl_wire_ChunkHeader* out);

  // Fills the next chunk and returns true, or returns false once all chunks
  // were produced. kFailedPrecondition before a successful MakeHeader().
  Result<bool> NextChunk(nodefl_wire_Chunk* out);

  uint32_t chunk_count() const { return chunk_count_; }
  uint32_t next_index() const { return next_index_; }
  bool done() const { return header_made_ && next_index_ == chunk_count_; }

 private:
  ConstByteSpan artefact_;
  uint64_t transfer_id_;
  uint32_t artefact_kind_;
  size_t chunk_bytes_;
  uint32_t chunk_count_ = 0;
  uint32_t next_index_ = 0;
  bool header_made_ = false;
};

// Receives one artefact at a time and streams its bytes to a sink, checking
// everything the header promised:
//   * a header: non-zero transfer_id, a 32-byte digest, a chunk count that
//     can carry total_bytes (every chunk holds 1..kMaxChunkDataBytes bytes),
//     total_bytes within the receiver's limit;
//   * each chunk: the announced transfer_id, index exactly the next one (no
//     gaps, reordering or duplicates), a non-empty piece that keeps the
//     running total consistent with the header;
//   * after the last chunk: the SHA-256 of everything received.
// The first violation fails the transfer for good (until Reset()): the
// connection is then closed with that status (docs/protocol.md). Data reaches
// the sink before the final digest check, so the sink must treat it as
// provisional until complete() (e.g. stage it, and drop it on failure).
class ChunkReceiver {
 public:
  // Receives one piece at byte `offset` of the artefact. Pieces arrive in
  // order, without gaps. A non-OK status fails the transfer with it.
  using Sink = Status (*)(void* context, uint64_t offset, ConstByteSpan data);

  // `sink` may be nullptr (verify only, keep nothing). Headers announcing
  // more than `max_total_bytes` are refused with kResourceExhausted.
  explicit ChunkReceiver(Sink sink = nullptr, void* context = nullptr,
                         uint64_t max_total_bytes = UINT64_MAX);
  ~ChunkReceiver();
  ChunkReceiver(const ChunkReceiver&) = delete;
  ChunkReceiver& operator=(const ChunkReceiver&) = delete;

  // Starts a transfer. Allowed when idle or after a completed transfer;
  // during one it is a protocol error (kFailedPrecondition, and the transfer
  // fails). Errors: kInvalidArgument (inconsistent header),
  // kResourceExhausted (too large), kDataLoss (empty artefact whose digest
  // does not match), or the sticky status of a failed transfer.
  Status OnHeader(const nodefl_wire_ChunkHeader& header);

  // Accepts the next chunk. Errors (all fail the transfer):
  //   kFailedPrecondition  no transfer announced (no header, or the previous
  //                        transfer already completed and this is a new id)
  //   kInvalidArgument     wrong transfer_id, or data.size above capacity
  //   kOutOfRange          index is not the next one: out of order,
  //                        duplicate, or extra chunk after the last
  //   kDataLoss            empty chunk, sizes inconsistent with total_bytes
  //                        and chunk_count, or digest mismatch at the end
  //   the sink's status    if the sink refused the data
  Status OnChunk(const nodefl_wire_Chunk& chunk);

  // The whole artefact arrived and its digest matched.
  bool complete() const { return state_ == State::kComplete; }
  // A header was accepted and chunks are still expected.
  bool receiving() const { return state_ == State::kReceiving; }
  // OK, or why the transfer failed.
  Status status() const { return status_; }

  // Back to idle: forgets the current transfer and any failure.
  void Reset();

  uint64_t transfer_id() const { return transfer_id_; }
  uint32_t artefact() const { return artefact_; }
  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t received_bytes() const { return received_bytes_; }
  uint32_t chunk_count() const { return chunk_count_; }
  uint32_t next_index() const { return next_index_; }

 private:
  enum class State : uint8_t { kIdle, kReceiving, kComplete, kFailed };

  Status Fail(Status status);
  Status FinishDigest();

  Sink sink_;
  void* context_;
  uint64_t max_total_bytes_;
  mbedtls_sha256_context sha_;
  State state_ = State::kIdle;
  Status status_;
  uint64_t transfer_id_ = 0;
  uint32_t artefact_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t received_bytes_ = 0;
  uint32_t chunk_count_ = 0;
  uint32_t next_index_ = 0;
  uint8_t expected_digest_[kSha256Bytes] = {};
};

}  // namespace nodefl::protocol
