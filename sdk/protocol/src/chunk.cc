// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/chunk.h"

#include <mbedtls/version.h>

#include <cstring>

#include "nodefl/core/assert.h"
#include "nodefl/crypto/sha256.h"

namespace nodefl::protocol {
namespace {

using crypto::sha256::Finish;
using crypto::sha256::Starts;
using crypto::sha256::Update;

// Not secret data, but there is no reason to leak where digests differ.
bool DigestsEqual(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < kSha256Bytes; ++i) diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

}  // namespace

Status Sha256(ConstByteSpan data, Span<uint8_t> digest) {
  if (digest.size() < kSha256Bytes) return Status::InvalidArgument();
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  const bool ok = Starts(&ctx) == 0 && Update(&ctx, data.data(), data.size()) == 0 &&
                  Finish(&ctx, digest.data()) == 0;
  mbedtls_sha256_free(&ctx);
  return ok ? Status::Ok() : Status::Internal();
}

// ---- ChunkSender --------------------------------------------------------------

ChunkSender::ChunkSender(ConstByteSpan artefact, uint64_t transfer_id, uint32_t artefact_kind,
                         size_t chunk_bytes)
    : artefact_(artefact),
      transfer_id_(transfer_id),
      artefact_kind_(artefact_kind),
      chunk_bytes_(chunk_bytes) {}

Status ChunkSender::MakeHeader(nodefl_wire_ChunkHeader* out) {
  NODEFL_CHECK(out != nullptr);
  header_made_ = false;
  next_index_ = 0;
  if (transfer_id_ == 0 || chunk_bytes_ == 0 || chunk_bytes_ > kMaxChunkDataBytes) {
    return Status::InvalidArgument();
  }
  const uint64_t count = ChunkCount(artefact_.size(), chunk_bytes_);
  if (count > UINT32_MAX) return Status::InvalidArgument();
  std::memset(out, 0, sizeof(*out));
  NODEFL_TRY(Sha256(artefact_, Span<uint8_t>(out->sha256.bytes, kSha256Bytes)));
  out->sha256.size = static_cast<pb_size_t>(kSha256Bytes);
  out->transfer_id = transfer_id_;
  out->artefact = artefact_kind_;
  out->total_bytes = artefact_.size();
  out->chunk_count = static_cast<uint32_t>(count);
  chunk_count_ = static_cast<uint32_t>(count);
  header_made_ = true;
  return Status::Ok();
}

Result<bool> ChunkSender::NextChunk(nodefl_wire_Chunk* out) {
  NODEFL_CHECK(out != nullptr);
  if (!header_made_) return Status::FailedPrecondition();
  if (next_index_ == chunk_count_) return false;
  const size_t offset = static_cast<size_t>(next_index_) * chunk_bytes_;
  const size_t left = artefact_.size() - offset;
  const size_t n = left < chunk_bytes_ ? left : chunk_bytes_;
  out->transfer_id = transfer_id_;
  out->index = next_index_;
  std::memcpy(out->data.bytes, artefact_.data() + offset, n);
  out->data.size = static_cast<pb_size_t>(n);
  ++next_index_;
  return true;
}

// ---- ChunkReceiver ------------------------------------------------------------

ChunkReceiver::ChunkReceiver(Sink sink, void* context, uint64_t max_total_bytes)
    : sink_(sink), context_(context), max_total_bytes_(max_total_bytes) {
  mbedtls_sha256_init(&sha_);
}

ChunkReceiver::~ChunkReceiver() { mbedtls_sha256_free(&sha_); }

void ChunkReceiver::Reset() {
  state_ = State::kIdle;
  status_ = Status::Ok();
  transfer_id_ = 0;
  artefact_ = 0;
  total_bytes_ = 0;
  received_bytes_ = 0;
  chunk_count_ = 0;
  next_index_ = 0;
  std::memset(expected_digest_, 0, sizeof(expected_digest_));
}

Status ChunkReceiver::Fail(Status status) {
  state_ = State::kFailed;
  status_ = status;
  return status;
}

Status ChunkReceiver::FinishDigest() {
  uint8_t digest[kSha256Bytes];
  if (Finish(&sha_, digest) != 0) return Fail(Status::Internal());
  if (!DigestsEqual(digest, expected_digest_)) return Fail(Status::DataLoss());
  state_ = State::kComplete;
  return Status::Ok();
}

Status ChunkReceiver::OnHeader(const nodefl_wire_ChunkHeader& header) {
  if (state_ == State::kFailed) return status_;
  if (state_ == State::kReceiving) return Fail(Status::FailedPrecondition());
  Reset();
  const uint64_t total = header.total_bytes;
  const uint64_t count = header.chunk_count;
  if (header.transfer_id == 0 || header.sha256.size != kSha256Bytes ||
      (total == 0) != (count == 0) ||             // chunks carry at least one byte ...
      count > total ||                              // ... each
      total > count * kMaxChunkDataBytes) {         // and at most kMaxChunkDataBytes
    return Fail(Status::InvalidArgument());
  }
  if (total > max_total_bytes_) return Fail(Status::ResourceExhausted());
  transfer_id_ = header.transfer_id;
  artefact_ = header.artefact;
  total_bytes_ = total;
  chunk_count_ = header.chunk_count;
  std::memcpy(expected_digest_, header.sha256.bytes, kSha256Bytes);
  if (Starts(&sha_) != 0) return Fail(Status::Internal());
  state_ = State::kReceiving;
  if (chunk_count_ == 0) return FinishDigest();  // empty artefact: nothing follows
  return Status::Ok();
}

Status ChunkReceiver::OnChunk(const nodefl_wire_Chunk& chunk) {
  if (state_ == State::kFailed) return status_;
  if (state_ == State::kComplete && chunk.transfer_id == transfer_id_) {
    return Fail(Status::OutOfRange());  // extra chunk after the last
  }
  if (state_ != State::kReceiving) return Fail(Status::FailedPrecondition());
  if (chunk.transfer_id != transfer_id_) return Fail(Status::InvalidArgument());
  if (chunk.index != next_index_) return Fail(Status::OutOfRange());
  if (chunk.data.size > sizeof(chunk.data.bytes)) return Fail(Status::InvalidArgument());
  const uint64_t n = chunk.data.size;
  if (n == 0 || n > total_bytes_ - received_bytes_) return Fail(Status::DataLoss());
  // What is left must still fit the remaining chunks, 1..kMaxChunkDataBytes each.
  const uint64_t bytes_left = total_bytes_ - received_bytes_ - n;
  const uint64_t chunks_left = chunk_count_ - next_index_ - 1;
  if (bytes_left < chunks_left || bytes_left > chunks_left * kMaxChunkDataBytes) {
    return Fail(Status::DataLoss());
  }
  const ConstByteSpan data(chunk.data.bytes, static_cast<size_t>(n));
  if (sink_ != nullptr) {
    const Status sunk = sink_(context_, received_bytes_, data);
    if (!sunk.ok()) return Fail(sunk);
  }
  if (Update(&sha_, data.data(), data.size()) != 0) return Fail(Status::Internal());
  received_bytes_ += n;
  ++next_index_;
  if (next_index_ == chunk_count_) return FinishDigest();
  return Status::Ok();
}

}  // namespace nodefl::protocol
