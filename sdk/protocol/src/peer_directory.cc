// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/peer_directory.h"

#include <cstring>

#include "nodefl/core/little_endian.h"

namespace nodefl::protocol {

Status EncodePeerDirectoryEntry(uint32_t id, ConstByteSpan certificate_der, ConstByteSpan job_key, ByteSpan out,
                                size_t* written) {
  if (written == nullptr || certificate_der.empty() || certificate_der.size() > kMaxCertificateDerBytes ||
      job_key.size() != kJobKeyBytes) {
    return Status::InvalidArgument();
  }
  const size_t size = kPeerDirectoryEntryHeaderBytes + certificate_der.size() + job_key.size();
  if (out.size() < size) return Status::ResourceExhausted();
  StoreU32Le(id, out.data());
  StoreU16Le(static_cast<uint16_t>(certificate_der.size()), out.data() + 4);
  StoreU16Le(static_cast<uint16_t>(job_key.size()), out.data() + 6);
  std::memcpy(out.data() + kPeerDirectoryEntryHeaderBytes, certificate_der.data(), certificate_der.size());
  std::memcpy(out.data() + kPeerDirectoryEntryHeaderBytes + certificate_der.size(), job_key.data(), job_key.size());
  *written = size;
  return Status::Ok();
}

void PeerDirectoryStream::Reset() {
  next_offset_ = 0;
  count_known_ = false;
  count_ = entries_done_ = 0;
  head_have_ = entry_have_ = 0;
  entry_need_ = kPeerDirectoryEntryHeaderBytes;
  have_last_id_ = false;
  last_id_ = 0;
  failed_ = Status::Ok();
}

Status PeerDirectoryStream::Sink(void* context, uint64_t offset, ConstByteSpan data) {
  return static_cast<PeerDirectoryStream*>(context)->Feed(offset, data);
}

Status PeerDirectoryStream::Feed(uint64_t offset, ConstByteSpan data) {
  // Sticky: a refused entry leaves the parse state mid-entry (its sizes
  // refused, or the whole of it read), and taking more bytes from there
  // would write past the sizes that were refused.
  if (!failed_.ok()) return failed_;
  if (offset != next_offset_) return Status::DataLoss();
  next_offset_ += data.size();
  for (const uint8_t b : data) {
    const Status s = TakeByte(b);
    if (!s.ok()) {
      failed_ = s;
      return s;
    }
  }
  return Status::Ok();
}

Status PeerDirectoryStream::TakeByte(uint8_t b) {
  if (!count_known_) {
    head_[head_have_++] = b;
    if (head_have_ == 4) {
      count_ = LoadU32Le(head_);
      count_known_ = true;
    }
    return Status::Ok();
  }
  if (entries_done_ == count_) return Status::DataLoss();  // bytes after the last entry
  if (entry_have_ < kPeerDirectoryEntryHeaderBytes) {
    header_[entry_have_++] = b;
    if (entry_have_ == kPeerDirectoryEntryHeaderBytes) {
      cert_bytes_ = LoadU16Le(header_ + 4);
      const uint16_t key = LoadU16Le(header_ + 6);
      if (cert_bytes_ == 0 || cert_bytes_ > kMaxCertificateDerBytes || key != kJobKeyBytes) {
        return Status::DataLoss();
      }
      entry_need_ = kPeerDirectoryEntryHeaderBytes + cert_bytes_ + key;
    }
    return Status::Ok();
  }
  const size_t at = entry_have_++ - kPeerDirectoryEntryHeaderBytes;
  if (at < cert_bytes_) {
    out_.certificate_der.bytes[at] = b;
  } else {
    out_.job_key.bytes[at - cert_bytes_] = b;
  }
  if (entry_have_ == entry_need_) return FinishEntry();
  return Status::Ok();
}

Status PeerDirectoryStream::FinishEntry() {
  const uint32_t id = LoadU32Le(header_);
  if (have_last_id_ && id <= last_id_) return Status::DataLoss();
  have_last_id_ = true;
  last_id_ = id;
  out_.device_id = id;
  out_.found = true;
  out_.certificate_der.size = cert_bytes_;
  out_.job_key.size = static_cast<pb_size_t>(kJobKeyBytes);
  entry_have_ = 0;
  entry_need_ = kPeerDirectoryEntryHeaderBytes;
  ++entries_done_;
  if (on_entry_ != nullptr) on_entry_(context_, out_);
  return Status::Ok();
}

Status PeerDirectoryReceiver::OnHeader(const nodefl_wire_ChunkHeader& header) {
  if (header.artefact != kPeerDirectoryArtefact) return Status::InvalidArgument();
  stream_.Reset();
  NODEFL_TRY(receiver_.OnHeader(header));
  // An empty artefact completes with its header, yet a directory has at
  // least its count: refuse it as OnChunk refuses any cut-short directory.
  if (receiver_.complete() && !stream_.finished()) return Status::DataLoss();
  return Status::Ok();
}

Status PeerDirectoryReceiver::OnChunk(const nodefl_wire_Chunk& chunk) {
  NODEFL_TRY(receiver_.OnChunk(chunk));
  // A complete transfer must have carried every announced entry.
  if (receiver_.complete() && !stream_.finished()) return Status::DataLoss();
  return Status::Ok();
}

}  // namespace nodefl::protocol
