// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The peer directory: every participant's certificate and job key in one
// public artefact, streamed to every device of a device-to-device job
// (JobStart.peer_directory), which keeps the entries of its neighbours as
// they stream by. A device then never names its neighbours to the server
// in PeerKeyRequests (what it does need on demand, e.g. the key of a
// FedWalk 2-hop target, it still requests: the walk message to that device
// shows the same pair to the relay).
//
// Layout (artefact kind kPeerDirectoryArtefact), entries sorted by id:
//   u32 count, then count x { u32 id, u16 certificate bytes c (1..1024),
//   u16 job key bytes k (65), c bytes DER certificate, k bytes job key }
// all little-endian. A device checks every certificate it keeps against the
// pinned CA as it would a PeerCertificate answer; the server is not trusted
// with the directory's content.
//
// PeerDirectoryStream parses the artefact as chunks arrive (protocol::Chunk
// Receiver's sink), whatever the chunk boundaries, and hands each entry to
// the caller as a PeerCertificate, the shape the roles already take. Memory:
// one PeerCertificate (~1.1 KiB) inside the object; no heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::protocol {

inline constexpr uint32_t kPeerDirectoryArtefact = 0x50440001;  // "PD", 1
inline constexpr size_t kPeerDirectoryEntryHeaderBytes = 8;
inline constexpr size_t kMaxPeerDirectoryEntryBytes =
    kPeerDirectoryEntryHeaderBytes + kMaxCertificateDerBytes + kJobKeyBytes;

// Writes one entry into `out` (server side and tests); returns its size.
// kInvalidArgument for an empty or too large certificate or a job key that
// is not kJobKeyBytes; kResourceExhausted if `out` is too small.
Status EncodePeerDirectoryEntry(uint32_t id, ConstByteSpan certificate_der, ConstByteSpan job_key, ByteSpan out,
                                size_t* written);

class PeerDirectoryStream {
 public:
  // Called for every entry, in order, with a PeerCertificate (found = true,
  // certificate_der and job_key filled) valid during the call.
  using OnEntry = void (*)(void* context, const nodefl_wire_PeerCertificate& entry);

  PeerDirectoryStream(OnEntry on_entry, void* context) : on_entry_(on_entry), context_(context) {}

  // A new directory (a new job, or the transfer starts over).
  void Reset();
  // The next bytes of the artefact (offsets contiguous from 0). kDataLoss for
  // malformed content: bad sizes, ids not ascending, bytes after the last
  // entry. Errors are sticky: every later Feed returns the same status
  // until Reset().
  Status Feed(uint64_t offset, ConstByteSpan data);
  // Every announced entry was parsed (call once the transfer is complete).
  bool finished() const { return count_known_ && entries_done_ == count_; }
  uint32_t entries() const { return entries_done_; }
  // A ChunkReceiver sink: `context` is the PeerDirectoryStream.
  static Status Sink(void* context, uint64_t offset, ConstByteSpan data);

 private:
  Status TakeByte(uint8_t b);
  Status FinishEntry();

  OnEntry on_entry_;
  void* context_;
  uint64_t next_offset_ = 0;
  bool count_known_ = false;
  uint32_t count_ = 0;
  uint32_t entries_done_ = 0;
  uint8_t head_[4] = {};
  size_t head_have_ = 0;
  // The entry being parsed: its header here, its certificate and job key
  // straight into out_ (no second copy of ~1 KiB).
  uint8_t header_[kPeerDirectoryEntryHeaderBytes] = {};
  size_t entry_have_ = 0;
  size_t entry_need_ = kPeerDirectoryEntryHeaderBytes;
  uint16_t cert_bytes_ = 0;
  bool have_last_id_ = false;
  uint32_t last_id_ = 0;
  Status failed_;  // the first error, returned by every Feed after it
  nodefl_wire_PeerCertificate out_ = nodefl_wire_PeerCertificate_init_zero;
};

// The directory's transfer as a role receives it: ChunkHeader and Chunks
// of the job (kPeerDirectoryArtefact), parsed as they arrive. Any other
// artefact, or a transfer the wire layer refuses, is an error the role
// returns from OnMessage (the session closes: a protocol violation).
class PeerDirectoryReceiver {
 public:
  PeerDirectoryReceiver(PeerDirectoryStream::OnEntry on_entry, void* context)
      : stream_(on_entry, context), receiver_(&PeerDirectoryStream::Sink, &stream_, kMaxDirectoryBytes) {}

  // Bounds the artefact: 100,000 devices of the largest entries.
  static constexpr uint64_t kMaxDirectoryBytes = 4 + uint64_t{100000} * kMaxPeerDirectoryEntryBytes;

  void Reset() {
    stream_.Reset();
    receiver_.Reset();
  }
  Status OnHeader(const nodefl_wire_ChunkHeader& header);
  Status OnChunk(const nodefl_wire_Chunk& chunk);
  // The whole directory arrived, its digest matched and every entry parsed.
  bool complete() const { return receiver_.complete() && stream_.finished(); }

 private:
  PeerDirectoryStream stream_;
  ChunkReceiver receiver_;
};

}  // namespace nodefl::protocol
