// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The peer directory (protocol/peer_directory.h) against a one-pass
// reference reading of the same artefact ("u32 count, then count x { u32 id,
// u16 c (1..1024), u16 k (65), c + k bytes }", ids strictly ascending,
// nothing after the last entry). The reference gives the entries, the byte
// at which the content turns malformed (if it does) and whether the
// directory is whole. Then:
//   * PeerDirectoryStream fed in pieces whose sizes come from the input must
//     hand over exactly the reference's entries, in order and byte for byte,
//     each by the end of the piece holding its last byte; fail (kDataLoss)
//     on the piece holding the malformed byte and not before; refuse a
//     piece at the wrong offset; say finished() only for a whole directory.
//     Pieces fed after a failure must not succeed or yield entries (and,
//     under ASan/UBSan, must not touch memory outside the stream);
//   * PeerDirectoryReceiver given the artefact through ChunkSender (valid
//     digest, input-chosen chunk size) must yield the same entries, return
//     OK until the chunk holding the malformed byte, then kDataLoss, and
//     end complete() exactly for a whole directory; a transfer that ends
//     without a whole directory must have been refused by some call (the
//     role closes the session on that error; it never sees complete()).
//     Another artefact kind, and a directory above kMaxDirectoryBytes, are
//     refused at the header.
// Input: byte 0 flags (bit 0: build the artefact from a description with
// EncodePeerDirectoryEntry, else the rest of the input is the artefact;
// bit 1: one piece at a wrong offset; bit 2: another artefact kind;
// bit 3: header size-limit probes), byte 1 seeds the piece sizes, byte 2
// picks the chunk size (0: 4096, else that many bytes). The description
// (bit 0): u8 entries (mod 17), u8 count adjustment (mod 3: the count field
// is the number of entries written + 0, + 1, or - 1), then per entry: u8
// flags (b0: a u8 job key size follows, else 65; b1: try a too small output
// first), u16 id increment (0 repeats an id), u16 certificate size (as
// given, 0 and above 1024 included), min(size, 1024) certificate bytes and
// the job key bytes (zeros once the input runs out). Little-endian.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/peer_directory.h"

namespace {

using nodefl::ByteSpan;
using nodefl::ConstByteSpan;
using nodefl::Status;
using nodefl::StatusCode;
namespace protocol = nodefl::protocol;

constexpr size_t kMaxArtefactBytes = 1 << 16;
constexpr size_t kMinEntryBytes = protocol::kPeerDirectoryEntryHeaderBytes + 1 + protocol::kJobKeyBytes;
constexpr size_t kMaxEntries = kMaxArtefactBytes / kMinEntryBytes + 1;
constexpr size_t kMaxDescribed = 16;
constexpr size_t kNoError = SIZE_MAX;

void Check(bool ok) {
  if (!ok) std::abort();
}

uint32_t LoadLe(const uint8_t* p, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}

struct RefEntry {
  uint32_t id;
  size_t cert_at;  // offsets into the artefact
  size_t cert_bytes;
  size_t key_at;
  size_t last;  // offset of the entry's last byte
};

struct Reference {
  RefEntry entries[kMaxEntries];
  size_t n = 0;
  size_t error_at = kNoError;  // first byte that makes the content malformed
  bool whole = false;          // count known, every entry, nothing after
};

void Read(const uint8_t* d, size_t size, Reference* r) {
  r->n = 0;
  r->error_at = kNoError;
  r->whole = false;
  if (size < 4) return;
  const uint32_t count = LoadLe(d, 4);
  size_t at = 4;
  while (true) {
    if (at == size) {
      r->whole = r->n == count;
      return;
    }
    if (r->n == count) {
      r->error_at = at;  // bytes after the last entry
      return;
    }
    if (size - at < protocol::kPeerDirectoryEntryHeaderBytes) return;
    const size_t cert = LoadLe(d + at + 4, 2);
    const size_t key = LoadLe(d + at + 6, 2);
    if (cert == 0 || cert > protocol::kMaxCertificateDerBytes || key != protocol::kJobKeyBytes) {
      r->error_at = at + protocol::kPeerDirectoryEntryHeaderBytes - 1;  // known with the header's last byte
      return;
    }
    const size_t need = protocol::kPeerDirectoryEntryHeaderBytes + cert + key;
    if (size - at < need) return;
    const uint32_t id = LoadLe(d + at, 4);
    if (r->n > 0 && id <= r->entries[r->n - 1].id) {
      r->error_at = at + need - 1;  // known once the entry is whole
      return;
    }
    Check(r->n < kMaxEntries);
    r->entries[r->n++] = RefEntry{id, at + protocol::kPeerDirectoryEntryHeaderBytes, cert,
                                  at + protocol::kPeerDirectoryEntryHeaderBytes + cert, at + need - 1};
    at += need;
  }
}

// Every entry handed over must be the reference's next one, byte for byte.
struct Seen {
  const uint8_t* artefact;
  const Reference* ref;
  size_t n;
};

void OnEntry(void* context, const nodefl_wire_PeerCertificate& e) {
  Seen& s = *static_cast<Seen*>(context);
  Check(s.n < s.ref->n);
  const RefEntry& want = s.ref->entries[s.n++];
  Check(e.found && e.device_id == want.id);
  Check(e.certificate_der.size == want.cert_bytes &&
        std::memcmp(e.certificate_der.bytes, s.artefact + want.cert_at, want.cert_bytes) == 0);
  Check(e.job_key.size == protocol::kJobKeyBytes &&
        std::memcmp(e.job_key.bytes, s.artefact + want.key_at, protocol::kJobKeyBytes) == 0);
}

size_t EntriesEndingBefore(const Reference& r, size_t end) {
  size_t k = 0;
  while (k < r.n && r.entries[k].last < end) ++k;
  return k;
}

void CheckStream(const uint8_t* d, size_t size, const Reference& ref, uint32_t seed, bool wrong_offset) {
  Seen seen{d, &ref, 0};
  protocol::PeerDirectoryStream stream(&OnEntry, &seen);
  stream.Reset();
  size_t at = 0;
  bool failed = false;
  const uint32_t wrong_piece = seed % 7;
  for (uint32_t piece_no = 0; at < size; ++piece_no) {
    seed = seed * 1103515245u + 12345u;
    const size_t want = (seed >> 16) % 4 == 0 ? 1 + (seed >> 18) % 1500 : 1 + (seed >> 18) % 97;
    const size_t piece = want < size - at ? want : size - at;
    const ConstByteSpan data(d + at, piece);
    if (wrong_offset && piece_no == wrong_piece && !failed) {
      // Offsets must be contiguous: a gap or an overlap is refused.
      const size_t before = seen.n;
      Check(stream.Feed(at + 1 + (seed >> 20) % 3, data).code() == StatusCode::kDataLoss);
      if (at > 0) Check(stream.Feed(at - 1, data).code() == StatusCode::kDataLoss);
      Check(seen.n == before);
      return;  // what a stream does after that is not specified
    }
    const Status s = stream.Feed(at, data);
    if (failed) {
      // After malformed content nothing more can be a directory entry.
      Check(!s.ok() && seen.n == EntriesEndingBefore(ref, ref.error_at));
    } else if (ref.error_at != kNoError && ref.error_at < at + piece) {
      Check(s.code() == StatusCode::kDataLoss);
      Check(seen.n == EntriesEndingBefore(ref, ref.error_at));
      failed = true;
    } else {
      Check(s.ok());
      Check(seen.n == EntriesEndingBefore(ref, at + piece) && stream.entries() == seen.n);
    }
    at += piece;
  }
  Check(seen.n == ref.n);
  if (!failed) Check(stream.finished() == ref.whole && stream.entries() == ref.n);
}

void CheckReceiver(const uint8_t* d, size_t size, const Reference& ref, size_t chunk_bytes, bool wrong_kind) {
  Seen seen{d, &ref, 0};
  static nodefl_wire_ChunkHeader h;
  static nodefl_wire_Chunk c;
  protocol::PeerDirectoryReceiver rx(&OnEntry, &seen);
  protocol::ChunkSender sender(ConstByteSpan(d, size), 1 + size,
                               wrong_kind ? protocol::kPeerDirectoryArtefact + 1 : protocol::kPeerDirectoryArtefact,
                               chunk_bytes);
  Check(sender.MakeHeader(&h).ok());
  if (wrong_kind) {
    Check(rx.OnHeader(h).code() == StatusCode::kInvalidArgument);
    Check(!rx.complete() && seen.n == 0);
    return;
  }
  // The call that must fail first, counting the header as call 0 and chunk
  // i as call i + 1: the one carrying the malformed byte, else (a directory
  // cut short) the one that completes the transfer.
  const uint32_t calls = h.chunk_count + 1;
  uint32_t must_fail = UINT32_MAX;
  if (ref.error_at != kNoError) {
    must_fail = static_cast<uint32_t>(ref.error_at / chunk_bytes) + 1;
  } else if (!ref.whole) {
    must_fail = calls - 1;
  }
  Status s = rx.OnHeader(h);
  Check(must_fail == 0 ? s.code() == StatusCode::kDataLoss : s.ok());
  for (uint32_t call = 1; call < calls; ++call) {
    const nodefl::Result<bool> more = sender.NextChunk(&c);
    Check(more.ok() && *more);
    Check(!rx.complete());
    s = rx.OnChunk(c);
    if (call < must_fail) {
      Check(s.ok());
      Check(seen.n == EntriesEndingBefore(ref, size_t{call} * chunk_bytes));
    } else {
      Check(s.code() == StatusCode::kDataLoss);  // the stream's status, then sticky
    }
  }
  Check(seen.n == ref.n);
  Check(rx.complete() == ref.whole);
  Check(ref.whole == (must_fail == UINT32_MAX));
}

// Headers alone: the receiver's size bound, and a header during a transfer.
void CheckHeaderLimits() {
  static nodefl_wire_ChunkHeader h;
  std::memset(&h, 0, sizeof(h));
  h.transfer_id = 9;
  h.artefact = protocol::kPeerDirectoryArtefact;
  h.sha256.size = protocol::kSha256Bytes;
  h.total_bytes = protocol::PeerDirectoryReceiver::kMaxDirectoryBytes + 1;
  h.chunk_count = static_cast<uint32_t>(protocol::ChunkCount(h.total_bytes, protocol::kMaxChunkDataBytes));
  protocol::PeerDirectoryReceiver rx(nullptr, nullptr);
  Check(rx.OnHeader(h).code() == StatusCode::kResourceExhausted);
  Check(rx.OnHeader(h).code() == StatusCode::kResourceExhausted && !rx.complete());
  rx.Reset();
  h.total_bytes -= 1;
  h.chunk_count = static_cast<uint32_t>(protocol::ChunkCount(h.total_bytes, protocol::kMaxChunkDataBytes));
  Check(rx.OnHeader(h).ok() && !rx.complete());
  Check(rx.OnHeader(h).code() == StatusCode::kFailedPrecondition);
}

// Builds an artefact from the description; returns its size.
size_t Describe(const uint8_t* in, size_t in_size, uint8_t* out, bool* expect_whole) {
  static uint8_t cert[UINT16_MAX];  // zeros past what the input supplies
  static uint8_t key[UINT8_MAX];
  size_t at = 0;
  auto byte = [&]() -> uint8_t { return at < in_size ? in[at++] : 0; };
  auto take = [&](uint8_t* dst, size_t n) {
    const size_t got = n < in_size - at ? n : in_size - at;
    std::memcpy(dst, in + at, got);
    std::memset(dst + got, 0, n - got);
    at += got;
  };
  const size_t n = byte() % (kMaxDescribed + 1);
  const uint8_t adjust_code = byte() % 3;
  const int adjust = adjust_code == 2 ? -1 : adjust_code;
  size_t written_total = 4;
  uint32_t written_entries = 0;
  uint32_t id = 0;
  bool ascending = true;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t flags = byte();
    const size_t key_bytes = flags & 1 ? byte() : protocol::kJobKeyBytes;
    const uint32_t step = byte() | (uint32_t{byte()} << 8);
    const size_t cert_bytes = byte() | (size_t{byte()} << 8);
    take(cert, cert_bytes < protocol::kMaxCertificateDerBytes ? cert_bytes : protocol::kMaxCertificateDerBytes);
    take(key, key_bytes);
    const bool valid = cert_bytes >= 1 && cert_bytes <= protocol::kMaxCertificateDerBytes &&
                       key_bytes == protocol::kJobKeyBytes;
    const uint32_t next_id = id + step;
    const ByteSpan room(out + written_total, kMaxArtefactBytes - written_total);
    size_t written = 0;
    if (flags & 2) {
      const Status small = protocol::EncodePeerDirectoryEntry(next_id, ConstByteSpan(cert, cert_bytes),
                                                              ConstByteSpan(key, key_bytes), room.first(7), &written);
      Check(small.code() == (valid ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument));
    }
    const Status s = protocol::EncodePeerDirectoryEntry(next_id, ConstByteSpan(cert, cert_bytes),
                                                        ConstByteSpan(key, key_bytes), room, &written);
    if (!valid) {
      Check(s.code() == StatusCode::kInvalidArgument);
      continue;
    }
    Check(s.ok() && written == protocol::kPeerDirectoryEntryHeaderBytes + cert_bytes + key_bytes);
    if (written_entries > 0 && next_id <= id) ascending = false;  // a repeated id (or wrap-around)
    id = next_id;
    written_total += written;
    ++written_entries;
  }
  const uint32_t count = adjust < 0 && written_entries == 0 ? 0 : written_entries + static_cast<uint32_t>(adjust);
  for (size_t i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(count >> (8 * i));
  *expect_whole = ascending && count == written_entries;
  return written_total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static uint8_t built[kMaxArtefactBytes];
  static Reference ref;
  const uint8_t flags = data[0];
  const uint32_t seed = data[1] | 1u;
  const size_t chunk_bytes = data[2] == 0 ? protocol::kMaxChunkDataBytes : data[2];
  const uint8_t* artefact = data + 3;
  size_t artefact_size = size - 3;
  if (artefact_size > kMaxArtefactBytes) return 0;
  if (flags & 1) {
    bool expect_whole = false;
    artefact_size = Describe(data + 3, size - 3, built, &expect_whole);
    artefact = built;
    Read(artefact, artefact_size, &ref);
    // What EncodePeerDirectoryEntry wrote reads back as a directory exactly
    // when the ids ascend and the count is right.
    Check(ref.whole == expect_whole);
  } else {
    Read(artefact, artefact_size, &ref);
  }
  CheckStream(artefact, artefact_size, ref, seed, (flags & 2) != 0);
  CheckReceiver(artefact, artefact_size, ref, chunk_bytes, (flags & 4) != 0);
  if (flags & 8) CheckHeaderLimits();
  return 0;
}
