// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of the neighbour-echo job: the plumbing proof in
// which every device seals one message to each of its neighbours through the
// relay and every receiver verifies what it got. The server never learns the
// edges from the coordinator (it only sees per-device counts); the relay does
// see who sends to whom (docs/privacy.md, "What the relay sees").
//
// Rounds (JobStart.round / JobReport round = Envelope.round):
//   1  keys:  devices fetch their neighbours' certificates, verify them and
//             derive pairwise keys; each reports `expected` (its degree).
//   2  send:  started when every participant reported round 1 or the
//             round-1 deadline passed; devices seal and send, then report
//             sent/received/duplicates/rejected once they have everything or
//             their own deadline passes.
// Devices that miss a deadline are recorded and the job goes on without them.
// Devices the job gives up on (round 1 missed, or unreachable in round 2)
// are named to every round-2 device still running in a peers-gone record
// (protocol/echo/job_format.h), so receivers stop waiting for messages that
// will not come; every such device learns which devices were given up on
// (docs/privacy.md).
//
// Plain, single-threaded state machine: the network layer calls it from one
// strand and performs the returned actions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nodefl/protocol/envelope.pb.h"

namespace nodefl::server::jobs {

struct EchoSummary {
  uint32_t participants = 0;
  uint32_t keys_ready = 0;        // devices that finished round 1
  uint32_t reported = 0;          // devices that finished round 2
  uint32_t clean = 0;             // reported received == expected, no duplicate/rejected
  uint64_t expected = 0;          // sum of degrees = 2|E| when everyone is in
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t duplicates = 0;
  uint64_t rejected = 0;
  uint64_t abandoned = 0;         // messages receivers stopped waiting for (sender gone)
  uint64_t gone_notices = 0;      // peers-gone records addressed (one per device and batch)
  std::vector<uint32_t> missed_round1;  // no key report before the deadline
  std::vector<uint32_t> missed_round2;  // no final report before the deadline
  std::vector<uint32_t> unclean;        // reported a shortfall or bad messages
  double seconds_round1 = 0;
  double seconds_round2 = 0;

  // Every participant reported, every message expected arrived exactly once
  // and intact, and nothing was rejected.
  bool verified() const {
    return missed_round1.empty() && missed_round2.empty() && unclean.empty() &&
           received == expected && sent == expected && duplicates == 0 && rejected == 0;
  }
};

class NeighbourEchoJob {
 public:
  struct Options {
    uint64_t job_id = 1;
    uint32_t round1_deadline_ms = 120'000;
    uint32_t round2_deadline_ms = 300'000;
  };

  // What the network layer must do: send JobStart(round) to these devices.
  struct StartRound {
    uint32_t round = 0;
    uint32_t deadline_ms = 0;
    std::vector<uint32_t> devices;
  };

  NeighbourEchoJob(const Options& options, std::vector<uint32_t> participants);

  // Round 1 begins now: returns JobStart for every participant.
  StartRound Begin(uint64_t now_us);
  // A JobReport from `device` for this job. Returns a StartRound with
  // devices when this report completed round 1 (round 2 begins).
  // Reports from non-participants, for the wrong round or repeated are
  // counted as protocol errors and otherwise ignored.
  StartRound OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                      uint64_t now_us);
  // Deadlines. May start round 2 (returned) or finish the job.
  StartRound Poll(uint64_t now_us);
  // `device` is unreachable (offline past the server's grace, or a start
  // could not be sent): it misses the running round now rather than at its
  // deadline. May start round 2 (returned) or finish the job.
  StartRound OnUnreachable(uint32_t device, uint64_t now_us);

  bool finished() const { return phase_ == Phase::kFinished; }
  uint32_t round() const;
  const EchoSummary& summary() const { return summary_; }
  uint64_t protocol_errors() const { return protocol_errors_; }
  uint64_t repeated_reports() const { return repeated_reports_; }
  // Devices given up on since the last call and the round-2 devices still
  // running that must hear of them (empty when there is nothing to tell).
  struct PeersGone {
    std::vector<uint32_t> gone;        // ascending
    std::vector<uint32_t> recipients;  // ascending
  };
  PeersGone TakePeersGone();

  // One line for progress output: "round 2: 8123/10312 reported".
  std::string ProgressLine() const;

 private:
  enum class Phase { kIdle, kKeys, kSend, kFinished };
  enum class DeviceState : uint8_t { kWaitingKeys, kKeysReady, kReported, kMissed };

  StartRound BeginRound2(uint64_t now_us);
  void Finish(uint64_t now_us);

  Options options_;
  std::vector<uint32_t> participants_;
  std::map<uint32_t, DeviceState> devices_;
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0;
  uint64_t job_started_us_ = 0;
  EchoSummary summary_;
  uint64_t protocol_errors_ = 0;
  uint64_t repeated_reports_ = 0;
  std::vector<uint32_t> gone_pending_;  // given up on, not yet told
};

}  // namespace nodefl::server::jobs
