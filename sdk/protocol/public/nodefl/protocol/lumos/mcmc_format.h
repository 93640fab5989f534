// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_LUMOS_MCMC between the device role (sdk/lumos,
// mcmc_role.h) and the server's coordinator (server/jobs,
// lumos_mcmc_job.h): Lumos Alg. 2 (MCMC with the Metropolis-Hastings
// acceptance of Eq. 18) with Alg. 3 (the candidate vertex set), every
// workload comparison made by the secure two-party comparison of
// sdk/compare. Paper mode only: the server learns every comparison's
// result, as the paper's server does (docs/privacy.md). All integers little
// endian.
//
// The job follows the secure-compare job (Lumos Alg. 1) in the lumos-trees
// plan and starts from each device's greedy orientation (both endpoints
// keep an edge whose log-degrees tie, as Alg. 1 states).
//
// Every round's JobStart.parameters = McmcRoundParameters:
//   round 1, kKeys: the device announces this job's ephemeral key, fetches
//     its neighbours' keys, and reports (code kFailedPrecondition when it
//     holds no greedy result). Keys for non-neighbours are fetched when a
//     session with one starts (Alg. 3 compares candidates pairwise).
//   round 2, kIterate: everything below happens inside this one round.
//   round 3, kReport: each device sends its kept neighbours (kMcmcKept,
//     when the parameters ask for them), a kMcmcSummary record and its
//     JobReport.
//
// Comparisons. kMcmcSessionStart records (a compare::SessionStart and the
// value the device compares: its workload now, or its workload before its
// latest move) start sessions of one comparison; the parties run them as
// in the secure-compare job (compare/job_format.h), sealed with this job's
// pair keys, and report kMcmcSessionResult (compare::SessionResult, results
// public). kMcmcSessionCancel ends sessions the server settled.
//
// Moves (Alg. 2 lines 3-5, Eq. 17). kMcmcMove{iteration} to the device u
// the server picked: u draws k uniformly from 1..max(1, round(ln n)) (n: the
// neighbours it keeps, with keys), picks k of them uniformly and sends each
// a kGive; a receiver keeps the edge, then answers kTaken; u stops keeping
// an edge only on its kTaken. When every kGive is answered u sends
// kMcmcMoveDone. kMcmcRevert{iteration} (Eq. 18 said no) undoes it: u keeps
// the given edges again, then sends kReturn; the receiver restores what it
// kept before the kGive and answers kReturned; then kMcmcMoveDone with the
// revert flag. Every edge stays kept by an endpoint at every moment.
//
// Device-to-device plaintexts (sealed with the pair's job keys, relayed):
// type (1) | body. kMcmcCompareMessage: session id (4) | comparison
// message; kMcmcLeafMessage: McmcLeafMessage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/protocol/compare/job_format.h"

namespace nodefl::lumos {

inline constexpr uint8_t kMcmcVersion = 1;

enum class McmcPhase : uint8_t { kKeys = 1, kIterate = 2, kReport = 3 };

struct McmcRoundParameters {
  McmcPhase phase = McmcPhase::kKeys;
  bool upload_kept = false;  // kReport: send the kept neighbours
  uint8_t salt[compare::kCompareSaltBytes] = {};
  uint8_t width = 16;      // bits of the workloads compared
  uint8_t digit_bits = 0;  // 0: the plan's default
  compare::OtMode mode = compare::OtMode::kBase;
  uint16_t max_sessions = 4;  // concurrent sessions per device
};
// version | phase | flags (bit 0: upload kept) | salt (16) | width |
// digit_bits | mode | max_sessions (2)
inline constexpr size_t kMcmcParametersBytes = 24;

[[nodiscard]] Result<size_t> EncodeMcmcParameters(const McmcRoundParameters& p, ByteSpan out);
// kInvalidArgument for a wrong size or version, an unknown phase, flag or
// mode, a width outside 1..32, digit bits above 8, max_sessions 0.
[[nodiscard]] Result<McmcRoundParameters> DecodeMcmcParameters(ConstByteSpan bytes);

// Which of its values a device compares in a session.
enum class McmcValue : uint8_t {
  kWorkload = 0,        // the neighbours it keeps now
  kBeforeMove = 1,      // the neighbours it kept before its latest kMcmcMove (Alg. 2 line 7's f(X_t))
};

struct McmcSessionStart {
  compare::SessionStart start;
  McmcValue value = McmcValue::kWorkload;
};
// compare::SessionStart (kSessionStartBytes) | value
inline constexpr size_t kMcmcSessionStartBytes = compare::kSessionStartBytes + 1;

size_t EncodeMcmcSessionStart(const McmcSessionStart& s, uint8_t* out);  // kMcmcSessionStartBytes
[[nodiscard]] Result<McmcSessionStart> DecodeMcmcSessionStart(ConstByteSpan bytes);

// JobData kinds.
enum McmcDataKind : uint32_t {
  kMcmcSessionStart = 1,   // server -> device: McmcSessionStart records
  kMcmcSessionCancel = 2,  // server -> device: u32 session ids
  kMcmcSessionResult = 3,  // device -> server: one compare::SessionResult
  kMcmcMove = 4,           // server -> device: u32 iteration
  kMcmcRevert = 5,         // server -> device: u32 iteration
  kMcmcMoveDone = 6,       // device -> server: McmcMoveDone
  kMcmcKept = 7,           // device -> server: u32 ids of kept neighbours, ascending; several records when long
  kMcmcSummary = 8,        // device -> server: McmcSummary
};

struct McmcMoveDone {
  uint32_t iteration = 0;
  bool reverted = false;  // the answer to kMcmcRevert (else to kMcmcMove)
  uint32_t moved = 0;     // edges given away (kMcmcMove) or taken back (kMcmcRevert)
};
// iteration (4) | flags (bit 0: reverted) | moved (4)
inline constexpr size_t kMcmcMoveDoneBytes = 9;

[[nodiscard]] Result<size_t> EncodeMcmcMoveDone(const McmcMoveDone& d, ByteSpan out);
[[nodiscard]] Result<McmcMoveDone> DecodeMcmcMoveDone(ConstByteSpan bytes);

struct McmcSummary {
  uint32_t workload = 0;         // neighbours kept now
  uint32_t greedy_workload = 0;  // kept after Alg. 1
  // Neighbours the device does not keep although no kTaken said the other
  // end keeps them: 0 unless the protocol is broken.
  uint32_t uncovered = 0;
  uint32_t moves = 0;             // kMcmcMove answered
  uint32_t reverts = 0;           // kMcmcRevert answered
  uint32_t taken = 0;             // kGive received
  uint32_t sessions_done = 0;
  uint32_t sessions_aborted = 0;  // aborted or refused
  uint32_t messages_sent = 0;     // relayed, comparisons and leaf messages
  uint32_t messages_received = 0;
  uint32_t rejected = 0;          // relayed messages that failed to open or matched nothing
  uint32_t key_failures = 0;
};
inline constexpr size_t kMcmcSummaryBytes = 12 * 4;

[[nodiscard]] Result<size_t> EncodeMcmcSummary(const McmcSummary& s, ByteSpan out);
[[nodiscard]] Result<McmcSummary> DecodeMcmcSummary(ConstByteSpan bytes);

// Device-to-device.
enum class McmcPlaintextType : uint8_t { kCompareMessage = 1, kLeafMessage = 2 };

enum class McmcLeafKind : uint8_t { kGive = 1, kTaken = 2, kReturn = 3, kReturned = 4 };
struct McmcLeafMessage {
  McmcLeafKind kind = McmcLeafKind::kGive;
  uint32_t iteration = 0;
};
// type (kLeafMessage) | version | kind | iteration (4)
inline constexpr size_t kMcmcLeafMessageBytes = 7;

[[nodiscard]] Result<size_t> EncodeMcmcLeafMessage(const McmcLeafMessage& m, ByteSpan out);
// kInvalidArgument for a wrong size, type or version, an unknown kind,
// iteration 0.
[[nodiscard]] Result<McmcLeafMessage> DecodeMcmcLeafMessage(ConstByteSpan bytes);

}  // namespace nodefl::lumos
