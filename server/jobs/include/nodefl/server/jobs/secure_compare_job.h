// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of JOB_KIND_SECURE_COMPARE, run as Lumos's greedy
// initialisation (seed paper Lumos, Alg. 1 / Eq. 15): every edge (u, v)
// compares round(ln deg u) with round(ln deg v) in a secure two-party
// comparison, and u keeps v in its initial tree iff
// round(ln deg v) >= round(ln deg u). The wire contract is
// sdk/protocol/public/nodefl/protocol/compare/job_format.h; the sessions are
// paced and settled by server/compare (ComparisonService).
//
//   round 1 (requests): parameters (a fresh salt) to every participant; each
//     asks, as party A, to compare with its neighbours of higher id
//     (kSessionRequests), then reports.
//   round 2 (comparisons): one session per requested edge (the lower id is
//     party A); the service starts them as slots free up (kSessionStart),
//     settles them from both parties' kSessionResult and cancels the
//     leftover party of an aborted one (kSessionCancel). Ends when every
//     session settled or at the round's deadline.
//   round 3 (report): devices report their done/aborted counts.
//
// Outputs (output_dir): secure-compare-sessions.tsv (every session) and,
// with public results, greedy-init.tsv (each participant's kept
// neighbours). An aborted session keeps the edge on both sides: the
// safe default leaves it in both trees.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/server/compare_service/comparison_service.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct SecureCompareOptions {
  uint64_t job_id = 1;
  nodefl::compare::CompareJobParameters params;  // salt: filled in by the job
  uint32_t round_deadline_ms = 300'000;          // rounds 1 and 3
  // Round 2; 0: 4 x max(round_deadline_ms, session_timeout_ms), because
  // sessions queue behind a hub's few slots.
  uint32_t session_round_deadline_ms = 0;
  uint32_t session_timeout_ms = 120'000;  // a session unsettled this long after its start aborts
  std::string output_dir;
};

struct SecureCompareSummary {
  uint32_t participants = 0;
  uint32_t requests_reported = 0;        // devices that finished round 1
  std::vector<uint32_t> missed_round1;   // no round-1 report: their edges are aborted
  std::vector<uint32_t> missed_round3;
  uint64_t requested_edges = 0;
  uint64_t refused_requests = 0;  // a lower or own id, a non-participant, a repeat
  uint64_t ignored_reports = 0;   // late, repeated or for the wrong round
  uint64_t late_requests = 0;     // request records after round 1 ended (or from a missed device)
  uint64_t protocol_errors = 0;   // malformed or misplaced records (the service counts its own)
  uint64_t device_done = 0, device_aborted = 0;  // round-3 reports (sent, rejected)
  // Greedy initialisation (only with public results).
  uint64_t edges_kept_both = 0;     // done with equal values
  uint64_t edges_kept_one = 0;      // done with different values
  uint64_t edges_kept_aborted = 0;  // aborted: kept by both as the safe default
  uint64_t edges_unknown = 0;       // done without public results
  double seconds_requests = 0, seconds_sessions = 0, seconds_report = 0;
  std::string sessions_path, greedy_init_path;
  std::string error;
};

class SecureCompareJob final : public Job {
 public:
  SecureCompareJob(SecureCompareOptions options, std::vector<uint32_t> participants);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t kind, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  std::vector<DeviceData> TakeData() override;
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;
  // A function of its inputs (the salt through FillJobEntropy): a server
  // restart continues it from its journal (Job::continuable).
  bool continuable() const override { return true; }
  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const SecureCompareSummary& summary() const { return summary_; }
  const nodefl::compare::CompareJobParameters& parameters() const { return options_.params; }
  const server::compare_service::ComparisonService& sessions() const { return service_; }
  // Lumos's greedy initialisation as far as the server knows it: for every
  // participant, the neighbours it keeps (ascending). Empty without public
  // results.
  std::map<uint32_t, std::vector<uint32_t>> KeptNeighbours() const;
  const std::vector<uint32_t>& participants() const { return participants_; }
  // The edges compared (a < b), as requested by the devices.
  const std::set<std::pair<uint32_t, uint32_t>>& edges() const { return requests_; }

 private:
  enum class Phase { kIdle, kRequests, kSessions, kReport, kFinished };
  enum class DeviceState : uint8_t { kWaitingRequests, kReady, kReported, kMissed };

  void TakeRequests(uint32_t device, const std::vector<uint8_t>& bytes);
  std::vector<RoundStart> StartSessionRound(uint64_t now_us);
  std::vector<RoundStart> StartReportRound(uint64_t now_us);
  // Sends the service's cancels, then the starts it can make now.
  void Pump(uint64_t now_us);
  void Finish(uint64_t now_us);
  void WriteOutputs();
  uint64_t SessionRoundDeadlineUs() const;

  SecureCompareOptions options_;
  std::vector<uint32_t> participants_;
  std::map<uint32_t, DeviceState> devices_;
  std::set<std::pair<uint32_t, uint32_t>> requests_;  // (a, b), a < b
  server::compare_service::ComparisonService service_;
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0;
  SecureCompareSummary summary_;
  std::vector<DeviceData> data_;
};

}  // namespace nodefl::server::jobs
