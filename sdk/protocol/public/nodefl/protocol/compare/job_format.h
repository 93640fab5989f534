// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_SECURE_COMPARE between the device role
// (compare_role.h) and the server's comparison service (server/compare).
// All integers little endian.
//
// Round 1 (keys and requests). JobStart.parameters = CompareJobParameters
// (kCompareParametersBytes). Each device fetches and checks its neighbours'
// certificates (as in the neighbour-echo job), then sends one or more
// JobData{kind = kSessionRequests}: the neighbours it asks to compare with,
// in the job's value (see CompareValue), as party A (it holds x). A device
// asks only neighbours with a higher id, so each edge is asked for once.
// The server learns these ids; it learns every edge from relay traffic
// anyway (docs/privacy.md). Then JobReport for round 1.
//
// Round 2 (comparisons). The server paces sessions: it sends a
// kSessionStart record to both parties of a session when both have a free
// slot (at most `max_sessions` each). The parties exchange the
// comparison messages (comparison_session.h) through the relay, each
// sealed with the pair's job keys; plaintext = session id (4) | message.
// When a session ends on a device, it sends JobData{kind = kSessionResult}.
// Round 2 ends when the server starts round 3.
//
// The server treats a session as done only when both parties report done
// with the same result bits; otherwise (an abort, a disagreement, the
// session's timeout) it is aborted, and the server sends kSessionCancel to
// a party still running it, which then aborts and reports.
//
// Round 3 (report). The device sends its JobReport (sessions done in
// `sent`, aborted in `rejected`) and is finished.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::compare {

inline constexpr size_t kCompareSaltBytes = 16;
// Bounds of the values compared and of the digits the protocol splits them
// into (comparison_plan.h picks a plan within them).
inline constexpr uint32_t kMaxCompareWidth = 32;
inline constexpr uint32_t kMaxCompareDigitBits = 8;

// Which party of a session a device is: A holds x (and asked for the
// session), B holds y.
enum class Role : uint8_t { kA, kB };
// How the oblivious transfers are made. kExtension is IKNP without the
// KOS15 consistency check (ot/iknp.h): B is the extension's receiver, so A's
// input is protected only from a B that follows the protocol (semi-honest);
// a deviating B can learn A's digits.
enum class OtMode : uint8_t { kBase, kExtension };

// What a device compares.
enum class CompareValue : uint8_t {
  kLogDegree = 1,  // round(ln(degree)), Lumos Eq. 15 / Alg. 1; 0 for degree 0
  kDegree = 2,     // the degree itself
};

struct CompareJobParameters {
  uint8_t salt[kCompareSaltBytes] = {};
  uint8_t width = 8;
  uint8_t digit_bits = 0;      // 0: the plan's default
  OtMode mode = OtMode::kBase;  // kExtension: semi-honest only (comparison_schedule.h)
  CompareValue value = CompareValue::kLogDegree;
  bool results_public = true;  // devices report the result bits to the server
  uint16_t max_sessions = 4;   // concurrent sessions per device
};
// salt | width | digit_bits | mode | value | flags (bit 0: results public) | max_sessions (2)
inline constexpr size_t kCompareParametersBytes = kCompareSaltBytes + 7;

void EncodeCompareParameters(const CompareJobParameters& p, uint8_t (&out)[kCompareParametersBytes]);
// kInvalidArgument for a wrong size, width outside 1..32, a bad plan, an
// unknown mode or value, or max_sessions 0.
Result<CompareJobParameters> DecodeCompareParameters(ConstByteSpan bytes);

enum CompareDataKind : uint32_t {
  kSessionRequests = 1,  // device -> server: u32 peer ids
  kSessionStart = 2,     // server -> device: SessionStart records
  kSessionResult = 3,    // device -> server: one SessionResult
  kSessionCancel = 4,    // server -> device: u32 session ids to abort (the
                         // other party aborted, or the session timed out)
};

// server -> device, one or more per JobData (kSessionStartBytes each).
struct SessionStart {
  uint32_t session = 0;
  uint32_t peer = 0;
  Role role = Role::kA;
  uint16_t count = 1;  // comparisons in the session (all of the same value)
};
inline constexpr size_t kSessionStartBytes = 11;

// device -> server.
inline constexpr size_t kSessionResultHeaderBytes = 20;
inline constexpr size_t kMaxSessionResultComparisons = 4096;  // 1 KiB of result bits
struct SessionResult {
  uint32_t session = 0;
  bool done = false;          // false: aborted
  uint8_t code = 0;           // StatusCode of an abort
  uint16_t count = 0;
  uint32_t bytes_sent = 0;
  uint32_t bytes_received = 0;
  uint16_t messages_sent = 0;
  // With results public and done: 2 bits per comparison (bit 0 [x > y],
  // bit 1 [x = y]), packed; otherwise empty.
  uint8_t bits[kMaxSessionResultComparisons / 4] = {};
  uint16_t bit_bytes = 0;
};

size_t EncodeSessionStart(const SessionStart& s, uint8_t* out);  // kSessionStartBytes
Result<SessionStart> DecodeSessionStart(ConstByteSpan bytes);
Result<size_t> EncodeSessionResult(const SessionResult& r, ByteSpan out);
Result<SessionResult> DecodeSessionResult(ConstByteSpan bytes);

}  // namespace nodefl::compare
