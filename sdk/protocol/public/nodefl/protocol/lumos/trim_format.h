// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_LUMOS_TRIM between the device role
// (sdk/lumos, trim_role.h) and the server's coordinator (server/jobs,
// lumos_trim_job.h). All integers little endian. docs/lumos.md explains
// the method ("Draining to a public threshold").
//
// The job follows the secure-compare job (Lumos Alg. 1) in the lumos-trees
// plan and inherits each device's greedy orientation and the pair keys that
// job derived; a device that did not finish that job refuses this one.
//
// Every round's JobStart.parameters = TrimRoundParameters:
//   round 1, kReady: the device takes over its greedy result (edges whose
//     two log-degrees tie are dropped by the lower id, which both learned
//     from their comparison), sends a kTrimSummary record and its JobReport
//     (code kFailedPrecondition when it holds no greedy result).
//   kDrain rounds (step s = 1, 2, ..., JobStart.round = s + 1): the
//     threshold T is public. A device whose workload exceeds T is a root: it
//     sends a kSearch to every neighbour it keeps. A device reached first by
//     a search (from its parent) either accepts, when its workload is below
//     T (it keeps the parent's edge and answers kEcho with the reverse
//     flag), or passes the search on to the neighbours it keeps and answers
//     its parent once all of them answered. Every search is answered by one
//     kEcho. A device that accepted goes on accepting later searches (each
//     with a reverse echo) while its workload stays below T; otherwise a
//     later search gets a plain echo. A reverse echo from c means "c keeps
//     our edge now": the receiver stops keeping it. A device passes at most
//     one reverse echo to its parent.
//     Devices send kTrimStepOutcome: non-roots at once, roots when every
//     search they sent is answered.
//   kReport (the last round): each device sends its kept neighbours
//     (kTrimKept records, only when the parameters ask for them), a
//     kTrimSummary record, and its JobReport.
//
// A search may reach a device before that device's JobStart for the step
// (they travel different queues): a search carries the step and threshold,
// and the device starts the step from it.
//
// Device-to-device messages (sealed with the pair's keys, relayed): all
// kTrimMessageBytes long, whatever their type, so that the relay sees one
// size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::lumos {

inline constexpr uint8_t kTrimVersion = 1;

enum class TrimPhase : uint8_t { kReady = 1, kDrain = 2, kReport = 3 };

struct TrimRoundParameters {
  TrimPhase phase = TrimPhase::kReady;
  uint32_t threshold = 0;     // kDrain
  uint32_t step = 0;          // kDrain: 1, 2, ...
  bool upload_kept = false;   // kReport: send the kept neighbours (paper mode)
};
// version | phase | flags (bit 0: upload kept) | threshold (4) | step (4)
inline constexpr size_t kTrimParametersBytes = 11;

[[nodiscard]] Result<size_t> EncodeTrimParameters(const TrimRoundParameters& p, ByteSpan out);
// kInvalidArgument for a wrong size or version, an unknown phase or flag, a
// drain step 0.
[[nodiscard]] Result<TrimRoundParameters> DecodeTrimParameters(ConstByteSpan bytes);

enum class TrimMessageType : uint8_t { kSearch = 1, kEcho = 2 };

struct TrimMessage {
  TrimMessageType type = TrimMessageType::kSearch;
  bool reverse = false;  // kEcho: the sender keeps the edge now
  uint32_t step = 0;
  uint32_t threshold = 0;
};
// version | type | flags (bit 0: reverse) | step (4) | threshold (4)
inline constexpr size_t kTrimMessageBytes = 11;

[[nodiscard]] Result<size_t> EncodeTrimMessage(const TrimMessage& m, ByteSpan out);
// kInvalidArgument for a wrong size or version, an unknown type or flag, a
// search with the reverse flag, step 0.
[[nodiscard]] Result<TrimMessage> DecodeTrimMessage(ConstByteSpan bytes);

// JobData kinds.
enum TrimDataKind : uint32_t {
  kTrimStepOutcome = 1,  // device -> server: TrimStepOutcome
  kTrimKept = 2,         // device -> server: u32 ids of kept neighbours, ascending; several records when long
  kTrimSummary = 3,      // device -> server: TrimSummary
  // server -> device: u32 ids of devices that take no part any more (no
  // ready report, or offline at a step's start). Devices stop searching
  // them and stop waiting for their answers; their edges stay as they are.
  kTrimAbsent = 4,
};

struct TrimStepOutcome {
  uint32_t step = 0;
  bool root = false;        // workload above the threshold at the step's start
  bool still_over = false;  // a root still above the threshold at the end
  uint32_t relief = 0;      // reverse echoes a root received (its workload fell by this much)
};
// step (4) | flags (1: bit 0 root, bit 1 still over) | relief (4)
inline constexpr size_t kTrimStepOutcomeBytes = 9;

[[nodiscard]] Result<size_t> EncodeTrimStepOutcome(const TrimStepOutcome& o, ByteSpan out);
[[nodiscard]] Result<TrimStepOutcome> DecodeTrimStepOutcome(ConstByteSpan bytes);

struct TrimSummary {
  uint32_t workload = 0;         // neighbours kept now
  uint32_t greedy_workload = 0;  // kept after Alg. 1, before the tie drop
  // Neighbours the device neither keeps nor knows to be kept by the other
  // endpoint: 0 unless the protocol is broken (the job's coverage check).
  uint32_t uncovered = 0;
  uint32_t unkeyed = 0;          // neighbours without pair keys (their edges stay as they are)
  // Edges this device keeps without knowing what the other end does (its
  // comparison aborted): possibly kept twice, so the maximum may sit above
  // the optimum; the job certifies the optimum only when this is 0 everywhere.
  uint32_t unsettled = 0;
  uint32_t messages_sent = 0;    // searches and echoes
  uint32_t messages_received = 0;
  uint32_t rejected = 0;         // relayed messages that failed to open or made no sense
};
inline constexpr size_t kTrimSummaryBytes = 8 * 4;

[[nodiscard]] Result<size_t> EncodeTrimSummary(const TrimSummary& s, ByteSpan out);
[[nodiscard]] Result<TrimSummary> DecodeTrimSummary(ConstByteSpan bytes);

}  // namespace nodefl::lumos
