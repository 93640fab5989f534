// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ComparisonService: the server's bookkeeping of secure two-party
// comparison sessions (JOB_KIND_SECURE_COMPARE; the wire contract is
// sdk/protocol/public/nodefl/protocol/compare/job_format.h). Jobs add the
// sessions they want, and the service
//   - paces them: a device runs at most `max_sessions_per_device` sessions
//     at once, because each one holds OT state and relay traffic on a small
//     device. A party holds its slot from the start record until its own
//     result arrives (as the device holds its session context until it has
//     sent the result), also after the session settled without it: a
//     cancelled party frees its slot by answering the cancel. An
//     unreachable party's slots are freed at once; one that never answers a
//     cancel gets no further sessions (they end with the job's round);
//   - settles them: a session is done only when both parties report done
//     with the same count and the same result bits (neither party can make
//     the server believe a result the other did not compute); an abort, a
//     disagreement, the session's timeout or an unreachable party aborts it;
//   - tells a party still running an aborted session to stop (cancels).
//
// No networking and no clock: callers pass the time. Single-threaded.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "nodefl/protocol/compare/job_format.h"

namespace nodefl::server::compare_service {

enum class SessionState : uint8_t { kPending, kRunning, kDone, kAborted };

enum class AbortReason : uint8_t {
  kNone,
  kPartyAborted,  // a party reported an abort
  kDisagreement,  // both reported done, with different counts or result bits
  kDeadline,      // still running session_timeout_us after it started
  kOffline,       // a party could not be reached (or missed the job's key round)
  kRoundEnded,    // the job ended its comparison round with the session unsettled
};

std::string_view SessionStateName(SessionState state);  // "pending", "running", "done", "aborted"
std::string_view AbortReasonName(AbortReason reason);   // "-", "party-aborted", "disagreement", ...

// What one party said about a session (its SessionResult).
struct PartyReport {
  bool reported = false;
  bool done = false;
  uint8_t code = 0;  // the party's StatusCode when it aborted
  uint16_t count = 0;
  uint32_t bytes_sent = 0;
  uint32_t bytes_received = 0;
  uint16_t messages_sent = 0;
  std::vector<uint8_t> bits;  // as reported (empty when results are not public)
};

struct Session {
  uint32_t id = 0;
  uint32_t a = 0;  // party A (Role::kA, holds x)
  uint32_t b = 0;  // party B (Role::kB, holds y)
  uint16_t count = 1;
  SessionState state = SessionState::kPending;
  AbortReason reason = AbortReason::kNone;
  bool started = false;  // start records were handed out
  uint64_t started_us = 0;
  PartyReport report_a, report_b;

  bool settled() const { return state == SessionState::kDone || state == SessionState::kAborted; }
  // Done with public results: the agreed bits are known.
  bool has_result() const { return state == SessionState::kDone && !report_a.bits.empty(); }
  // Comparison i (valid when has_result()): bit 2i is [x > y], bit 2i + 1
  // is [x = y], least significant bit of each byte first.
  bool greater(uint32_t i) const { return Bit(2 * i); }
  bool equal(uint32_t i) const { return Bit(2 * i + 1); }
  const PartyReport& report_of(uint32_t device) const { return device == a ? report_a : report_b; }

 private:
  bool Bit(uint32_t bit) const { return ((report_a.bits[bit / 8] >> (bit % 8)) & 1u) != 0; }
};

struct ServiceOptions {
  uint32_t max_sessions_per_device = 4;
  uint64_t session_timeout_us = 120'000'000;
};

struct ServiceTotals {
  uint32_t sessions = 0;
  uint32_t pending = 0;
  uint32_t running = 0;
  uint32_t done = 0;
  uint32_t aborted = 0;
  std::map<AbortReason, uint32_t> aborted_by_reason;
  uint64_t comparisons = 0;  // in done sessions
  uint64_t bytes_sent = 0;   // both parties' reported bytes_sent, every reported session
  uint64_t messages_sent = 0;
  uint64_t late_reports = 0;      // a party reporting a session already settled (expected after a cancel)
  uint64_t protocol_errors = 0;   // duplicate reports, reports from non-parties or for unknown or unstarted sessions
  uint32_t peak_running_per_device = 0;  // most sessions any device ran at once
};

class ComparisonService {
 public:
  explicit ComparisonService(ServiceOptions options);

  // A new pending session between a (party A) and b (party B); ids start
  // at 1 and are dense. A session with a party already marked unreachable
  // is aborted (kOffline) at once.
  uint32_t Add(uint32_t a, uint32_t b, uint16_t count = 1);

  // Starts every pending session whose parties both have a free slot, the
  // lowest session ids first; a session whose party is full waits without
  // holding back sessions between other devices. Returns the start records
  // per device (role kA with peer b for a, kB with peer a for b).
  std::map<uint32_t, std::vector<nodefl::compare::SessionStart>> Schedule(uint64_t now_us);

  enum class ResultOutcome {
    kRecorded,  // the session waits for the other party
    kSettled,   // this report settled the session (done or aborted)
    kLate,      // the session had already settled (e.g. cancelled): accounted, no effect
    kRejected,  // a protocol error: counted and ignored
  };
  ResultOutcome OnResult(uint32_t device, const nodefl::compare::SessionResult& result, uint64_t now_us);

  // Running sessions older than session_timeout_us abort (kDeadline).
  void Poll(uint64_t now_us);
  // Every pending or running session of `device` aborts (kOffline) and its
  // slots are freed; the other party of a running one gets a cancel. Later
  // Adds with the device abort at once.
  void MarkUnreachable(uint32_t device);
  // Every unsettled session aborts with `reason`; running parties that have
  // not reported get a cancel.
  void AbortUnsettled(AbortReason reason);

  // Sessions each device must abort, queued since the last call.
  std::map<uint32_t, std::vector<uint32_t>> TakeCancels();

  const Session& session(uint32_t id) const { return sessions_.at(id - 1); }
  const std::vector<Session>& sessions() const { return sessions_; }
  const ServiceTotals& totals() const { return totals_; }
  bool all_settled() const { return totals_.pending == 0 && totals_.running == 0; }
  // Slots `device` holds now: sessions started and not yet reported by it
  // (cancelled ones included, until it answers the cancel).
  uint32_t RunningOn(uint32_t device) const;

 private:
  // Whether each party still holds its slot in a session.
  struct HeldSlots {
    bool a = false;
    bool b = false;
  };
  struct DeviceSlots {
    uint32_t running = 0;
    std::set<uint32_t> pending;  // ids of its pending sessions, for Schedule
  };

  Session& At(uint32_t id) { return sessions_[id - 1]; }
  uint32_t Room(uint32_t device) const;
  void Start(Session& s, uint64_t now_us, std::map<uint32_t, std::vector<nodefl::compare::SessionStart>>& out);
  void Release(uint32_t device, bool& held);
  void Settle(Session& s, SessionState state, AbortReason reason);
  // Cancels go to started parties that have not reported, except `spared`
  // (the party that caused the abort, or the unreachable one).
  void Abort(Session& s, AbortReason reason, std::optional<uint32_t> spared);
  void Account(const PartyReport& report);

  ServiceOptions options_;
  std::vector<Session> sessions_;  // index = id - 1
  std::vector<HeldSlots> held_;  // index = id - 1
  std::map<uint32_t, DeviceSlots> devices_;
  std::map<uint32_t, std::vector<uint32_t>> sessions_of_;  // device -> every session id it is in
  std::set<uint32_t> unreachable_;
  // Devices that gained room or pending sessions since the last Schedule:
  // only their sessions can have become startable.
  std::set<uint32_t> dirty_;
  std::deque<uint32_t> running_order_;  // ids in start order, for timeouts
  std::map<uint32_t, std::vector<uint32_t>> cancels_;
  ServiceTotals totals_;
};

}  // namespace nodefl::server::compare_service
