// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/streaming_upload.h"

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>

#include <cstring>

#include "nodefl/core/assert.h"
#include "nodefl/crypto/sha256.h"
#include "nodefl/protocol/chunk.h"

namespace nodefl::fedwalk {
namespace {

using crypto::sha256::Finish;
using crypto::sha256::Starts;
using crypto::sha256::Update;

}  // namespace

StreamingChunkSender::StreamingChunkSender(uint64_t total_bytes, Producer producer, void* context,
                                           uint64_t transfer_id, uint32_t artefact_kind,
                                           size_t chunk_bytes)
    : total_bytes_(total_bytes),
      producer_(producer),
      context_(context),
      transfer_id_(transfer_id),
      artefact_kind_(artefact_kind),
      chunk_bytes_(chunk_bytes) {}

Status StreamingChunkSender::MakeHeader(nodefl_wire_ChunkHeader* out, ByteSpan scratch) {
  NODEFL_CHECK(out != nullptr);
  header_made_ = false;
  next_index_ = 0;
  if (producer_ == nullptr) return Status::FailedPrecondition();
  if (transfer_id_ == 0 || chunk_bytes_ == 0 || chunk_bytes_ > protocol::kMaxChunkDataBytes) {
    return Status::InvalidArgument();
  }
  const uint64_t count = protocol::ChunkCount(total_bytes_, chunk_bytes_);
  if (count > UINT32_MAX) return Status::InvalidArgument();
  if (total_bytes_ > 0 && scratch.empty()) return Status::InvalidArgument();

  // First pass: the digest. Pieces no larger than a chunk, so a scratch that
  // is the chunk buffer itself always suffices.
  const size_t piece = scratch.size() < chunk_bytes_ ? scratch.size() : chunk_bytes_;
  uint8_t digest[protocol::kSha256Bytes];
  mbedtls_sha256_context sha;
  mbedtls_sha256_init(&sha);
  bool ok = Starts(&sha) == 0;
  for (uint64_t offset = 0; ok && offset < total_bytes_; offset += piece) {
    const uint64_t left = total_bytes_ - offset;
    const size_t n = left < piece ? static_cast<size_t>(left) : piece;
    producer_(context_, offset, scratch.first(n));
    ok = Update(&sha, scratch.data(), n) == 0;
  }
  ok = ok && Finish(&sha, digest) == 0;
  mbedtls_sha256_free(&sha);
  if (!ok) return Status::Internal();

  // Only now touch *out: it may share memory with `scratch`.
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->sha256.bytes, digest, sizeof(digest));
  out->sha256.size = static_cast<pb_size_t>(sizeof(digest));
  out->transfer_id = transfer_id_;
  out->artefact = artefact_kind_;
  out->total_bytes = total_bytes_;
  out->chunk_count = static_cast<uint32_t>(count);
  chunk_count_ = static_cast<uint32_t>(count);
  header_made_ = true;
  return Status::Ok();
}

Result<bool> StreamingChunkSender::NextChunk(nodefl_wire_Chunk* out) {
  NODEFL_CHECK(out != nullptr);
  if (!header_made_) return Status::FailedPrecondition();
  if (next_index_ == chunk_count_) return false;
  const uint64_t offset = uint64_t{next_index_} * chunk_bytes_;
  const uint64_t left = total_bytes_ - offset;
  const size_t n = left < chunk_bytes_ ? static_cast<size_t>(left) : chunk_bytes_;
  out->transfer_id = transfer_id_;
  out->index = next_index_;
  producer_(context_, offset, ByteSpan(out->data.bytes, n));
  out->data.size = static_cast<pb_size_t>(n);
  ++next_index_;
  return true;
}

}  // namespace nodefl::fedwalk
