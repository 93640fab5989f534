// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk walk job's contract between devices and the server (seed
// FedWalk Sec. 4.3, Alg. 1; docs/fedwalk.md): parameters,
// the JobData records, and the walk message devices forward to each other
// (sealed end to end, through the relay). One header for both sides.
//
// Walk semantics (Alg. 1, "Device operation"). The server starts a walk at
// device s with remaining length l. A device w holding a walk with
// remaining r:
//   1. if the walk's flag kSelfEncodeFirst is set, appends Enc(w) (the entry
//      the previous device could not encode: it jumped here with the 2-hop
//      predictor and holds no codebook row for w);
//   2. picks a neighbour u uniformly at random and appends Enc(u);
//   3. if r == 1: sends the walk to the server (kWalkResult) and stops;
//   4. if r > 2, with probability p (the 2-hop predictor): builds the pool
//      of, for each bin i, the round(max(c_u[i], 0)) vertices of bin i
//      nearest to u in the tree (c_u = u's dictionary row; the pool
//      leaves out u and w itself, see tree_index.h), draws u'
//      uniformly from the pool, and forwards the walk to u' with remaining
//      r - 2 and kSelfEncodeFirst (u' appends Enc(u'), the paper's
//      narrative; Alg. 1 line 27 prints "u", a typo);
//   5. otherwise forwards the walk to u with remaining r - 1.
// So a walk of length l carries exactly l encoded vertices (the start
// vertex is not one of them, as in Alg. 1), and the number of
// device-to-device messages per walk has the expectation of Theorem 4.2
// (Eq. 19): E_1 = 0, E_2 = 1, E_l = p(E_{l-2} + 1) + (1 - p)(E_{l-1} + 1),
// i.e. E_l = (l - 1)/(1 + p) + p (1 - (-p)^(l-1)) / (1 + p)^2 (32.64 at
// l = 40, p = 0.2). The paper's printed closed form, Eq. 21, solves Eq. 20
// but misses the start values (it gives E_2 = 0, E_3 = 2 - 2p; 32.31 at
// l = 40, p = 0.2); tests/sdk/fedwalk_walk_step_test.cc tells them apart.
// Enc(x) samples the codebook row of x (Eq. 12, SampleCodebookRow).
// A device with no neighbours ends the walk early with kDeadEnd. An empty
// pool (all c_u[i] <= 0, or no tree kept) falls back to step 5.
// "Neighbours" here are the neighbours taking part in the job: those the
// device holds a codebook row for (the HCT job's round 3).
//
// Every multi-byte value is little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"

namespace nodefl::fedwalk {

// Rounds (Envelope.round) of JOB_KIND_FEDWALK_WALKS.
inline constexpr uint32_t kWalkRoundKeys = 1;    // fetch neighbours' keys, report
inline constexpr uint32_t kWalkRoundWalks = 2;   // walks start, travel, end at the server
inline constexpr uint32_t kWalkRoundReport = 3;  // final ledger report

inline constexpr uint16_t kPhaseWalks = 3;  // ledger phase of the encodings

inline constexpr uint32_t kMaxWalkLength = 1000;

// Where a walk's 2-hop jump goes (walk_step.h, step 4).
enum class JumpPredictor : uint8_t {
  // FedWalk Alg. 1 step 4: a vertex near u in the HCT, as many per bin as
  // u's noised neighbour counts say (the paper's predictor).
  kTree = 0,
  // One of the device's own neighbours other than u, in a bin where u's
  // noised counts say u has neighbours: a true 2-hop neighbour whenever it
  // closes a triangle, and one hop from u through this device otherwise.
  kNeighbours = 1,
};
inline constexpr uint8_t kMaxJumpPredictor = 1;
// "tree", "neighbours" (options and summaries); "?" for an unknown value.
const char* JumpPredictorName(JumpPredictor predictor);
// kInvalidArgument for a name other than those.
Result<JumpPredictor> ParseJumpPredictor(const char* name);

// JobStart.parameters of round 1.
struct WalkParameters {
  PrivacyMode mode = kDefaultPrivacyMode;  // the codebook's mode, for the ledger
  uint16_t length = 40;               // l: the longest walk of the job
  double p = 0.2;                     // 2-hop predictor probability
  double epsilon = 2.0;               // ε of Eq. 12 (the codebook's)
  // The ε each encoding costs, as the server computed it for the codebook
  // the devices hold: 2·ε·Δu for the paper's raw score (Δu: the score's
  // sensitivity over the run), ε for the sensitivity-scaled score.
  double epsilon_per_encoding = 0.0;
  uint32_t max_pending_walks = 32;    // walks a device may hold waiting for a key
  uint8_t salt[16] = {};              // public job salt for the job keys
  JumpPredictor predictor = JumpPredictor::kTree;
};
// Layout (56 bytes): u8 version (kWalkParametersVersion), u8 mode, u16 l,
// u32 max_pending_walks, f64 p, f64 epsilon, f64 epsilon_per_encoding,
// salt (16 bytes), u8 predictor, 7 reserved bytes (zero). The predictor
// byte was reserved before it was defined: kTree (0) encodes as before,
// and a device that predates it refuses any other (non-zero reserved
// byte) instead of jumping the wrong way.
inline constexpr size_t kWalkParametersBytes = 56;
inline constexpr uint8_t kWalkParametersVersion = 1;
inline constexpr uint32_t kMaxPendingWalks = 1024;
// Ranges: mode known; 2 <= length <= kMaxWalkLength; 0 <= p <= 1; both
// epsilons finite and > 0; 1 <= max_pending_walks <= kMaxPendingWalks;
// predictor known.
Status CheckWalkParameters(const WalkParameters& params);
// kInvalidArgument for `out` shorter than kWalkParametersBytes or a field
// out of range.
Status EncodeWalkParameters(const WalkParameters& params, ByteSpan out);
// kInvalidArgument for a wrong size, version, non-zero reserved bytes or a
// field out of range.
Result<WalkParameters> DecodeWalkParameters(ConstByteSpan bytes);

// JobData.kind values.
enum class WalkRecord : uint32_t {
  kStartWalks = 1,  // server -> device: u32 count, count x {u32 walk_id, u16 length, u16 0}
  kWalkResult = 2,  // device -> server: u32 walk_id, u8 outcome, u8 0, u16 hops, u16 count,
                    //   u16 0, count x u32 encoded vertex ids
  // device -> server: u32 count, count x u32 walk_id: walks of a kStartWalks
  // record the device had no room to hold, ended with kDropped before any
  // step (no entries, 0 hops). One record answers one kStartWalks record,
  // sent while handling it, so no started walk is ever lost silently
  // (equivalent to one kWalkResult{kDropped, hops 0, count 0} per id).
  kDroppedStarts = 3,
};
inline constexpr size_t kStartWalkEntryBytes = 8;
inline constexpr uint32_t kMaxStartWalksPerRecord = 500;
inline constexpr size_t kWalkResultHeaderBytes = 12;
inline constexpr size_t kMaxJobDataBytes = 4096;  // JobData.data (envelope.options)

enum class WalkOutcome : uint8_t {
  kComplete = 0,   // l entries
  kDeadEnd = 1,    // a device without neighbours; the entries so far
  kDropped = 2,    // a device could not carry it on (queue full, no key for the next
                   // device, no own codebook row for kSelfEncodeFirst, a ledger
                   // that cannot record the encodings); the entries so far
};

// The walk message a device seals to the next device (RelaySend payload
// plaintext): u8 version (2), u8 flags, u16 remaining, u32 walk_id,
// u16 hops (device-to-device messages so far, this one included),
// u16 count, count x u32 encoded vertex ids, then zero bytes up to
// WalkMessageBytes(WalkLength) in all. WalkLength is the job's l for every
// message of every walk, so all walk messages of a job have one size and
// the relay cannot tell from a message's size how far its walk has come
// (version 1 sent count ids only, which gave each message's position away).
inline constexpr uint8_t kWalkMessageVersion = 2;
inline constexpr uint8_t kSelfEncodeFirst = 0x01;
inline constexpr size_t kWalkMessageHeaderBytes = 12;

struct WalkHeader {
  uint8_t flags = 0;
  uint16_t remaining = 0;
  uint32_t walk_id = 0;
  uint16_t hops = 0;
  uint16_t count = 0;
};

// The walk's total length l: count + (kSelfEncodeFirst ? 1 : 0) + remaining
// (the entries it holds, the one the holder owes for itself, and those still
// to come; every step keeps it constant).
inline uint32_t WalkLength(const WalkHeader& h) {
  return uint32_t{h.count} + ((h.flags & kSelfEncodeFirst) != 0 ? 1u : 0u) + h.remaining;
}
// Bytes of a walk message (and of a kWalkResult record) with `count` ids.
constexpr size_t WalkMessageBytes(size_t count) { return kWalkMessageHeaderBytes + 4 * count; }

// The header's invariants: no unknown flag, remaining >= 1, WalkLength <=
// kMaxWalkLength.
Status CheckWalkHeader(const WalkHeader& header);
// Writes the 12-byte header (the ids follow it, 4 bytes each, in the
// caller's buffer). kInvalidArgument for `out` too short or a header that
// fails CheckWalkHeader.
Status EncodeWalkHeader(const WalkHeader& header, ByteSpan out);
// Bytes of a padded walk message (what is sealed): WalkMessageBytes(l).
inline size_t PaddedWalkMessageBytes(const WalkHeader& h) { return WalkMessageBytes(WalkLength(h)); }
// Parses a whole walk message: version, CheckWalkHeader, the size must be
// exactly PaddedWalkMessageBytes and the padding zero. The ids are
// message[12 ..). kInvalidArgument otherwise.
Result<WalkHeader> DecodeWalkMessage(ConstByteSpan message);

// Id i of a little-endian id array (a walk message's tail, a result's).
inline uint32_t WalkIdAt(ConstByteSpan ids, size_t i) {
  const uint8_t* p = ids.data() + 4 * i;
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// ---- JobData records ---------------------------------------------------------

struct StartWalk {
  uint32_t walk_id = 0;
  uint16_t length = 0;  // 1 .. kMaxWalkLength (a device accepts up to its job's l)
};
// Encodes 1 .. kMaxStartWalksPerRecord entries; returns the record size.
// kInvalidArgument for a count or length out of range, kResourceExhausted
// for `out` too short.
Result<size_t> EncodeStartWalks(Span<const StartWalk> walks, ByteSpan out);
// Checks a kStartWalks record (count in range, exact size, lengths in
// range, reserved zero) and returns its count; StartWalkAt reads entry i of
// a record that passed.
Result<uint32_t> DecodeStartWalks(ConstByteSpan record);
StartWalk StartWalkAt(ConstByteSpan record, size_t i);

// kDroppedStarts: 1 .. kMaxStartWalksPerRecord walk ids.
Result<size_t> EncodeDroppedStarts(Span<const uint32_t> walk_ids, ByteSpan out);
// Checks the record and returns its count; the ids are record[4 ..).
Result<uint32_t> DecodeDroppedStarts(ConstByteSpan record);

struct WalkResultHeader {
  uint32_t walk_id = 0;
  WalkOutcome outcome = WalkOutcome::kComplete;
  uint16_t hops = 0;
  uint16_t count = 0;  // <= kMaxWalkLength
};
// Writes the 12-byte result header followed by `ids` (count x u32 LE, as
// a walk message holds them); returns the record size. kInvalidArgument
// for an unknown outcome, count > kMaxWalkLength or ids.size() != 4 x count;
// kResourceExhausted for `out` too short.
Result<size_t> EncodeWalkResult(const WalkResultHeader& header, ConstByteSpan ids, ByteSpan out);
// Checks a kWalkResult record (known outcome, reserved zero, count in
// range, exact size); the ids are record[12 ..).
Result<WalkResultHeader> DecodeWalkResult(ConstByteSpan record);

}  // namespace nodefl::fedwalk
