// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of one secure aggregation (docs/secure-aggregation.md)
// between the device's AggregationClient (sdk/secagg aggregation_client.h)
// and the server's AggregationService (server/secagg). It is a
// sub-protocol: any job embeds it, its JobData kinds live in their own
// range (kAggKindFirst .. kAggKindLast) so a job routes them without
// knowing them, and its device-to-device messages start with their own tag
// byte. All integers little endian.
//
// One aggregation of vectors of `length` words mod 2^32 (Bonawitz et al.,
// CCS'17, with the sparse mask graph of Bell et al., CCS'20):
//
//   start   server -> device: kAggStart (AggStart), then kAggPeers records:
//           the device's mask peers, ascending (the server draws the graph).
//   step 1  device: a fresh round key pair and self seed; its round secret
//           and self seed Shamir-shared t-of-k among its peers; to each
//           peer one AggPeerMessage (its round public key and the two
//           shares meant for that peer), sealed end to end by the job and
//           sent through the relay; then kAggKey to the server (its round
//           public key, public, and which peers its messages went to)
//           after every peer message, so the server has routed them all
//           when it reads the key.
//   step 2  server -> device: kAggMaskSet, a bitmap over the peer list:
//           the peers that finished step 1 and exchanged messages with it
//           both ways (the same relation both ways).
//           device: once it holds every such peer's message, it masks its
//           input with its self mask and one pair mask per mask-set peer
//           and uploads it in kAggMasked records.
//   step 3  server -> device (only to those that uploaded): kAggReveal, 2
//           bits per peer: reveal the share of that peer's self seed (it
//           uploaded) or of its round secret (it dropped after step 2).
//           device: kAggShares. A device reveals at most one kind of share
//           per peer, ever, so no peer's input can be unmasked.
//   the end server: the sum (server/secagg unmask.h). kAggAbort at any
//           point tells a device to forget the aggregation.
//
// Paper mode (kCAGC Protocol 4): no self seed and no shares; the peer
// message carries the round public key alone, nobody may drop, step 3 is
// skipped.
//
// Nothing the device sends the server in the clear depends on its input:
// a fresh public key, the masked vector (uniform given the masks) and
// shares of fresh random secrets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::secagg {

inline constexpr uint32_t kAggKindFirst = 0x5A00;
inline constexpr uint32_t kAggKindLast = 0x5AFF;
inline constexpr bool IsAggregationKind(uint32_t kind) { return kind >= kAggKindFirst && kind <= kAggKindLast; }

enum AggDataKind : uint32_t {
  kAggStart = 0x5A01,    // server -> device: AggStart
  kAggPeers = 0x5A02,    // server -> device: aggregation (4) | offset (4) | peer ids (4 each)
  kAggMaskSet = 0x5A03,  // server -> device: aggregation (4) | bit i of the bitmap: peer i masks with you
  kAggReveal = 0x5A04,   // server -> device: aggregation (4) | RevealCode of peer i in bits 2i, 2i+1
  kAggAbort = 0x5A05,    // server -> device: aggregation (4) | AbortReason (1)
  kAggKey = 0x5A11,      // device -> server: aggregation (4) | round public key (65) | peers shared with (4) | reached bitmap
  kAggMasked = 0x5A12,   // device -> server: aggregation (4) | offset (4) | words (4 each)
  kAggShares = 0x5A13,   // device -> server: aggregation (4) | count (2) | RevealedShare entries
  kAggRefuse = 0x5A14,   // device -> server: aggregation (4) | StatusCode (1): the device left it
};

enum class AggMode : uint8_t {
  kRobust = 0,  // self masks, Shamir-shared secrets, dropouts survived (default)
  kPaper = 1,   // kCAGC Protocol 4: pair masks only, nobody may drop
};

enum class RevealCode : uint8_t {
  kNothing = 0,
  kSelfSeed = 1,     // the peer uploaded: reveal your share of its self seed
  kRoundSecret = 2,  // the peer dropped after masking: your share of its round secret
};

enum class AbortReason : uint8_t {
  kExcluded = 1,        // this device missed step 1, or too few of its peers finished it
  kTooFewSurvivors = 2, // fewer devices than the threshold uploaded
  kLate = 3,            // this device's upload came after the step's deadline
  kUnmaskFailed = 4,    // not enough shares came back (or they did not open)
  kCancelled = 5,       // the job ended the aggregation
};

inline constexpr size_t kAggPublicKeyBytes = 65;  // = kRoundPublicKeyBytes (secagg/round_keys.h)
inline constexpr size_t kShareWords = 5;           // field elements per share of a 32-byte secret (shamir.h)
inline constexpr size_t kShareBytes = kShareWords * 8;
inline constexpr size_t kAggRecordBytes = 4096;    // JobData.data
// One kAggMaskSet or kAggReveal record carries the whole peer list.
inline constexpr uint32_t kMaxAggPeers = 16000;
inline constexpr uint32_t kMaxAggLength = 1u << 24;  // words
inline constexpr uint32_t kAggPeersPerRecord = (kAggRecordBytes - 8) / 4;
inline constexpr uint32_t kAggWordsPerRecord = 1000;

struct AggStart {
  uint32_t aggregation = 0;  // >= 1, new for each aggregation of a job
  uint64_t round = 0;        // mixed into pair seeds and mask streams; unique per job and aggregation
  uint32_t length = 0;       // words, 1 .. kMaxAggLength
  uint32_t peer_count = 0;   // 1 .. kMaxAggPeers
  uint16_t threshold = 0;    // robust: 1 .. peer_count shares rebuild a secret; paper: 0
  AggMode mode = AggMode::kRobust;
};
inline constexpr size_t kAggStartBytes = 23;
void EncodeAggStart(const AggStart& s, uint8_t (&out)[kAggStartBytes]);
// kInvalidArgument for a wrong size or a field outside its range.
Result<AggStart> DecodeAggStart(ConstByteSpan bytes);

// kAggPeers, kAggMasked: a run of 32-bit values at `offset` of a list.
struct AggRun {
  uint32_t aggregation = 0;
  uint32_t offset = 0;
  ConstByteSpan values;  // 4 bytes each, LE
  uint32_t count() const { return static_cast<uint32_t>(values.size() / 4); }
  uint32_t at(uint32_t i) const { return LoadU32Le(values.data() + 4 * i); }
};
// Returns the bytes written (8 + 4 * values.size()); kOutOfRange if `out` is short.
Result<size_t> EncodeAggRun(uint32_t aggregation, uint32_t offset, Span<const uint32_t> values, ByteSpan out);
// kInvalidArgument for fewer than 8 + 4 bytes or a length not 8 + 4k.
Result<AggRun> DecodeAggRun(ConstByteSpan bytes);

// kAggMaskSet, kAggReveal: aggregation | packed bits. Decoding checks only
// the header; the receiver checks the size against its peer count
// (MaskSetBytes, RevealBytes).
inline constexpr size_t MaskSetBytes(uint32_t peers) { return 4 + (peers + 7) / 8; }
inline constexpr size_t RevealBytes(uint32_t peers) { return 4 + (peers + 3) / 4; }
inline bool MaskSetBit(ConstByteSpan record, uint32_t i) { return ((record[4 + i / 8] >> (i % 8)) & 1u) != 0; }
inline RevealCode RevealOf(ConstByteSpan record, uint32_t i) {
  return static_cast<RevealCode>((record[4 + i / 4] >> (2 * (i % 4))) & 3u);
}
inline void SetMaskSetBit(ByteSpan record, uint32_t i) { record[4 + i / 8] |= static_cast<uint8_t>(1u << (i % 8)); }
inline void SetReveal(ByteSpan record, uint32_t i, RevealCode c) {
  record[4 + i / 4] |= static_cast<uint8_t>(static_cast<uint32_t>(c) << (2 * (i % 4)));
}

// kAggKey: aggregation | round public key | peers its messages went to |
// a bitmap over its peer list (bit i: its message went to peer i). The
// server keeps a pair in the mask sets only when each side's message went
// to the other: a device that could not key a peer skips it, and that peer
// must then neither wait for its message nor mask with it.
inline constexpr size_t kAggKeyHeaderBytes = 4 + kAggPublicKeyBytes + 4;
inline constexpr size_t AggKeyBytes(uint32_t peers) { return kAggKeyHeaderBytes + (peers + 7) / 8; }
static_assert(AggKeyBytes(kMaxAggPeers) <= kAggRecordBytes, "a key record fits one JobData");
inline bool AggKeyReached(ConstByteSpan record, uint32_t i) {
  return ((record[kAggKeyHeaderBytes + i / 8] >> (i % 8)) & 1u) != 0;
}
inline void SetAggKeyReached(ByteSpan record, uint32_t i) {
  record[kAggKeyHeaderBytes + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
}
struct AggKey {
  uint32_t aggregation = 0;
  uint8_t public_key[kAggPublicKeyBytes] = {};
  uint32_t shared_with = 0;  // peers its messages went to: the bits set
};
// Writes AggKeyBytes(peers) bytes with every reached bit clear (set them
// with SetAggKeyReached); kOutOfRange if `out` is short.
Result<size_t> EncodeAggKey(const AggKey& k, uint32_t peers, ByteSpan out);
// kInvalidArgument unless the record is AggKeyBytes(peers) long, the
// bitmap's padding bits are clear and shared_with counts its bits.
Result<AggKey> DecodeAggKey(ConstByteSpan bytes, uint32_t peers);

// kAggShares entries: the holder's point is its id + 1 (the server knows
// who sent the record).
struct RevealedShare {
  uint32_t peer = 0;  // whose secret
  RevealCode code = RevealCode::kNothing;  // kSelfSeed or kRoundSecret
  uint64_t y[kShareWords] = {};
};
inline constexpr size_t kRevealedShareBytes = 4 + 1 + kShareBytes;
inline constexpr size_t kAggSharesHeaderBytes = 6;
inline constexpr uint32_t kAggSharesPerRecord = (kAggRecordBytes - kAggSharesHeaderBytes) / kRevealedShareBytes;
// header: aggregation | count; then count entries.
size_t EncodeAggSharesHeader(uint32_t aggregation, uint16_t count, uint8_t* out);
size_t EncodeRevealedShare(const RevealedShare& s, uint8_t* out);
struct AggSharesView {
  uint32_t aggregation = 0;
  uint16_t count = 0;
  ConstByteSpan entries;
};
// kInvalidArgument for a size that does not match the count, or count 0.
Result<AggSharesView> DecodeAggShares(ConstByteSpan bytes);
// Entry i of a decoded view; kInvalidArgument for an unknown code.
Result<RevealedShare> RevealedShareAt(const AggSharesView& view, uint16_t i);

// kAggAbort, kAggRefuse.
inline constexpr size_t kAggAbortBytes = 5;
void EncodeAggAbort(uint32_t aggregation, uint8_t code, uint8_t (&out)[kAggAbortBytes]);
struct AggAbort {
  uint32_t aggregation = 0;
  uint8_t code = 0;
};
Result<AggAbort> DecodeAggAbort(ConstByteSpan bytes);

// The sealed device-to-device message of step 1 (plaintext; the job seals
// it with the pair's job keys). Tag byte first, so a job can tell it from
// its own messages.
inline constexpr uint8_t kAggPeerMessageTag = 0xA9;
inline constexpr size_t kAggPeerMessageBytes = 1 + 4 + 8 + kAggPublicKeyBytes + 1 + 2 * kShareBytes;
struct AggPeerMessage {
  uint32_t aggregation = 0;
  uint64_t round = 0;
  uint8_t public_key[kAggPublicKeyBytes] = {};
  bool has_shares = false;  // robust mode
  uint64_t self_seed[kShareWords] = {};     // the receiver's share of the sender's self seed
  uint64_t round_secret[kShareWords] = {};  // ... and of its round secret
};
void EncodeAggPeerMessage(const AggPeerMessage& m, uint8_t (&out)[kAggPeerMessageBytes]);
// kInvalidArgument for a wrong size, tag or flag.
Result<AggPeerMessage> DecodeAggPeerMessage(ConstByteSpan bytes);

}  // namespace nodefl::secagg
