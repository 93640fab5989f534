// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk walk job's contract between devices and the server (seed
// 000_e325fe6286b1aaed.txt, Sec. 4.3, Alg. 1; docs/fedwalk.md): parameters,
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
//      nearest to u in the tree (c_u = u's dictionary row), draws u'
//      uniformly from the pool, and forwards the walk to u' with remaining
//      r - 2 and kSelfEncodeFirst (u' appends Enc(u'), the paper's
//      narrative; Alg. 1 line 27 prints "u", a typo);
//   5. otherwise forwards the walk to u with remaining r - 1.
// So a walk of length l carries exactly l encoded vertices (the start
// vertex is not one of them, as in Alg. 1), and the number of
// device-to-device messages per walk has the expectation of Theorem 4.2
// (Eq. 21): E_1 = 0, E_2 = 1, E_l = p(E_{l-2} + 1) + (1 - p)(E_{l-1} + 1).
// Enc(x) samples the codebook row of x (Eq. 12, SampleCodebookRow).
// A device with no neighbours ends the walk early with kDeadEnd. An empty
// pool (all c_u[i] <= 0) falls back to step 5.
//
// Every multi-byte value is little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::fedwalk {

// Rounds (Envelope.round) of JOB_KIND_FEDWALK_WALKS.
inline constexpr uint32_t kWalkRoundKeys = 1;    // fetch neighbours' keys, report
inline constexpr uint32_t kWalkRoundWalks = 2;   // walks start, travel, end at the server
inline constexpr uint32_t kWalkRoundReport = 3;  // final ledger report

inline constexpr uint16_t kPhaseWalks = 3;  // ledger phase of the encodings

inline constexpr uint32_t kMaxWalkLength = 1000;

// JobStart.parameters of round 1.
struct WalkParameters {
  uint16_t length = 40;               // l
  double p = 0.2;                     // 2-hop predictor probability
  double epsilon = 2.0;               // ε of Eq. 12 (the codebook's)
  // The ε each encoding costs, as the server computed it for the codebook
  // the devices hold: 2·ε·Δu for the paper's raw score (Δu: the score's
  // sensitivity over the run), ε for the sensitivity-scaled score.
  double epsilon_per_encoding = 0.0;
  uint32_t max_pending_walks = 32;    // walks a device may hold waiting for a key
  uint8_t salt[16] = {};              // public job salt for the job keys
};
inline constexpr size_t kWalkParametersBytes = 56;
Status EncodeWalkParameters(const WalkParameters& params, ByteSpan out);
Result<WalkParameters> DecodeWalkParameters(ConstByteSpan bytes);

// JobData.kind values.
enum class WalkRecord : uint32_t {
  kStartWalks = 1,  // server -> device: u32 count, count x {u32 walk_id, u16 length, u16 0}
  kWalkResult = 2,  // device -> server: u32 walk_id, u8 outcome, u8 0, u16 hops, u16 count,
                    //   u16 0, count x u32 encoded vertex ids
};
inline constexpr size_t kStartWalkEntryBytes = 8;
inline constexpr uint32_t kMaxStartWalksPerRecord = 500;

enum class WalkOutcome : uint8_t {
  kComplete = 0,   // l entries
  kDeadEnd = 1,    // a device without neighbours; the entries so far
  kDropped = 2,    // a device could not forward it (queue full, no key for the next device)
};

// The walk message a device seals to the next device (RelaySend payload
// plaintext): u8 version (1), u8 flags, u16 remaining, u32 walk_id,
// u16 hops (device-to-device messages so far, this one included),
// u16 count, count x u32 encoded vertex ids.
inline constexpr uint8_t kWalkMessageVersion = 1;
inline constexpr uint8_t kSelfEncodeFirst = 0x01;
inline constexpr size_t kWalkMessageHeaderBytes = 12;

struct WalkHeader {
  uint8_t flags = 0;
  uint16_t remaining = 0;
  uint32_t walk_id = 0;
  uint16_t hops = 0;
  uint16_t count = 0;
};

}  // namespace nodefl::fedwalk
