// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of JOB_KIND_LUMOS_MCMC, the paper-mode second
// stage of the lumos-trees plan (after the secure-compare job, Lumos
// Alg. 1): Lumos Alg. 2 (MCMC, Metropolis-Hastings acceptance of Lumos
// Eq. 18) with Lumos Alg. 3 (the candidate vertex set), every workload
// comparison a secure two-party comparison the devices run. The plaintext
// reference of the same steps is Mcmc() and FindCandidateVertexSet() in
// server/lumos/trimming/src/trimming.cc; the contract is
// sdk/protocol/public/nodefl/protocol/lumos/mcmc_format.h.
//
//   round 1 (keys): devices announce their job keys and report. A device
//     that refuses (no greedy result) or misses the deadline is absent for
//     the rest of the job: its edges are never compared (no information)
//     and it is never picked.
//   round 2 (iterate): `iterations` iterations of Lumos Alg. 2, each a
//     sequence of steps driven by JobData records:
//       Alg. 3 -> u; move u; Alg. 3 -> u2; line 7 (Eq. 18); revert if
//       rejected.
//     u2 == u needs no line-7 comparison (u gave edges away: f' < f). An
//     aborted line-7 comparison rejects the move (nothing is known about
//     f' - f, and undoing cannot make the state worse).
//     A comparison step that misses its deadline aborts its unsettled
//     sessions (an aborted comparison gives no information); a move or
//     revert that misses it, or a picked device that becomes unreachable,
//     ends the iterations early (every edge stays kept by an endpoint on
//     the devices at every moment, so stopping is always safe).
//   round 3 (report): workloads, the devices' coverage checks and, with
//     upload_kept, their kept neighbours (the server checks every edge).
//
// Paper mode only: the server learns every comparison's result, as the
// paper's server does (docs/privacy.md); Alg. 3 needs them.
//
// Outputs (output_dir): lumos-mcmc-iterations.tsv (one line per
// iteration), lumos-workloads.tsv (per device: greedy workload, final
// workload) and, with upload_kept, lumos-trees.tsv (kept neighbours).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/protocol/lumos/mcmc_format.h"
#include "nodefl/server/compare_service/comparison_service.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct LumosMcmcOptions {
  uint64_t job_id = 1;
  uint32_t iterations = 300;  // Lumos Alg. 2's T (the paper's LastFM setting)
  uint64_t seed = 0;          // the server's picks and Eq. 18 draws; 0: from std::random_device
  uint32_t round_deadline_ms = 300'000;  // rounds 1 and 3
  uint32_t step_deadline_ms = 120'000;   // one comparison step, one move or one revert
  uint32_t session_timeout_ms = 60'000;  // one secure comparison session
  uint8_t width = 0;                     // bits of the workloads compared; 0: enough for the largest degree
  uint8_t digit_bits = 0;                // 0: the plan's default
  nodefl::compare::OtMode mode = nodefl::compare::OtMode::kBase;
  uint16_t max_sessions = 4;  // concurrent sessions per device
  bool upload_kept = true;    // devices report their kept neighbours; the server checks every edge
  std::string output_dir;
};

// How Lumos Eq. 18 was asked: delta = f(X') - f(X) as far as the secure
// comparison tells it (every move changes a maximum by at most one).
inline constexpr int kDeltaLower = -1;
inline constexpr int kDeltaEqual = 0;
inline constexpr int kDeltaHigher = 1;
inline constexpr int kDeltaUnknown = 2;  // skipped, or the line-7 session aborted

enum class LumosMcmcOutcome : uint8_t {
  kSkipped,          // u kept nothing to give (moved = 0)
  kAcceptedLower,
  kAcceptedEqual,
  kAcceptedHigher,   // Eq. 18's e^-1 draw said yes
  kRejectedHigher,   // Eq. 18's e^-1 draw said no
  kRejectedAborted,  // the line-7 comparison aborted: nothing known, the move is undone
};
std::string_view LumosMcmcOutcomeName(LumosMcmcOutcome outcome);  // "skipped", "accepted-lower", ...

struct LumosMcmcIteration {
  uint32_t iteration = 0;  // from 1
  uint32_t u = 0;          // Alg. 2 line 2: the maximum-workload device picked
  uint32_t moved = 0;      // edges u gave away (line 5, Eq. 17)
  uint32_t u2 = 0;         // line 6 (valid when moved > 0)
  bool compared = false;   // line 7 took a secure comparison (u2 != u)
  int delta_class = kDeltaUnknown;
  bool accepted = false;
  uint32_t comparisons = 0;  // sessions done in this iteration
  LumosMcmcOutcome outcome = LumosMcmcOutcome::kSkipped;
  double seconds = 0;
};

struct LumosMcmcAcceptance {
  uint64_t proposed = 0;
  uint64_t accepted = 0;
};

struct LumosMcmcSummary {
  uint32_t participants = 0;
  uint32_t ready = 0;                  // reported round 1 with OK
  std::vector<uint32_t> refused;       // round-1 code != OK (no greedy result)
  std::vector<uint32_t> missed_keys;   // no round-1 report in time
  std::vector<uint32_t> absent;        // every device that took no (further) part, in order
  std::vector<uint32_t> missed_report;
  uint64_t seed = 0;  // the seed used (drawn when the options said 0)
  uint32_t iterations_run = 0;
  uint32_t accepted = 0, rejected = 0, skipped = 0;
  std::map<int, LumosMcmcAcceptance> accepted_by_delta;  // kDeltaLower, kDeltaEqual, kDeltaHigher
  uint64_t comparisons = 0;       // sessions done
  uint64_t sessions = 0;          // sessions added
  uint64_t sessions_aborted = 0;
  uint64_t session_bytes = 0;     // the parties' reported bytes_sent, summed
  uint64_t late_results = 0;      // results for sessions already settled (answers to cancels)
  uint64_t service_protocol_errors = 0;
  uint32_t greedy_max = 0, max_workload = 0;
  double greedy_mean = 0, mean_workload = 0;
  uint64_t uncovered_edges = 0;    // with upload_kept: edges between reporting devices neither keeps
  uint64_t unverified_edges = 0;   // with upload_kept: an endpoint did not report, the other does not keep it
  uint64_t uncovered_local = 0;    // the devices' own counts, summed
  uint64_t report_errors = 0;      // round-3 reports with a code other than OK
  uint64_t messages = 0;           // the devices' messages_sent, summed
  uint64_t protocol_errors = 0;    // malformed or misplaced records
  uint64_t ignored = 0;            // late or repeated reports and records
  std::string stop_reason;         // empty: every iteration ran
  double seconds_keys = 0, seconds_iterations = 0, seconds_report = 0;
  std::string iterations_path, workloads_path, trees_path;
  std::string error;
};

class LumosMcmcJob final : public Job {
 public:
  // `edges`: the edge set the greedy job compared (a < b).
  LumosMcmcJob(LumosMcmcOptions options, std::vector<uint32_t> participants,
               std::vector<std::pair<uint32_t, uint32_t>> edges);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t kind, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  std::vector<DeviceData> TakeData() override;
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;
  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const LumosMcmcSummary& summary() const { return summary_; }
  // Every participant, ascending (the training stage starts from them).
  const std::vector<uint32_t>& participants() const { return participants_; }
  const std::vector<LumosMcmcIteration>& iterations() const { return iterations_; }
  // The kept neighbours the devices uploaded in round 3 (ascending).
  std::map<uint32_t, std::vector<uint32_t>> Kept() const;
  // Final workloads of the devices that sent a summary.
  std::map<uint32_t, uint32_t> Workloads() const;

 private:
  enum class Phase { kIdle, kKeys, kIterate, kReport, kFinished };
  // The steps of one Alg. 2 iteration, in order (Alg. 3 runs twice).
  enum class Step {
    kNeighbourCompare,   // Alg. 3 operation 1: every edge
    kCandidateCompare,   // Alg. 3 operation 2: every pair of candidates
    kMove,               // Alg. 2 lines 3-5
    kLine7Compare,       // Alg. 2 line 7: f(X') against f(X)
    kRevert,             // Eq. 18 said no
  };
  struct Device {
    bool responded = false;  // round 1 answered at all
    bool ready = false;      // round 1 answered OK
    bool absent = false;     // takes no (further) part in the iterations
    bool offline = false;    // a record or round start could not be delivered
    bool in_report = false;
    bool reported = false;
    bool has_summary = false;
    nodefl::lumos::McmcSummary summary;
    std::vector<uint32_t> kept;
  };
  // What each party of a session compares.
  struct SessionValues {
    nodefl::lumos::McmcValue a = nodefl::lumos::McmcValue::kWorkload;
    nodefl::lumos::McmcValue b = nodefl::lumos::McmcValue::kWorkload;
  };

  std::vector<uint8_t> Parameters(nodefl::lumos::McmcPhase phase) const;
  bool Active(uint32_t device) const;
  void MarkAbsent(uint32_t device);

  // Round 2 driving: each returns after starting the next step (or ending
  // the iterations).
  std::vector<RoundStart> StartIterations(uint64_t now_us);
  void BeginIteration(uint64_t now_us);
  void StartNeighbourStep(uint64_t now_us);
  void StartCandidateStep(const std::vector<uint32_t>& candidates, uint64_t now_us);
  void PickedLargest(uint32_t device, uint64_t now_us);
  void StartLine7(uint64_t now_us);
  void ResolveLine7(uint64_t now_us);
  void SendToPicked(uint32_t kind, Step step, uint64_t now_us);
  void FinishIteration(uint64_t now_us);
  void StopIterations(std::string reason, uint64_t now_us);
  // Advances round 2 as far as the answers received allow.
  void Drive(uint64_t now_us);
  // One step: true when it ended (and the next began).
  bool AdvanceComparisonStep(uint64_t now_us);
  bool AdvanceDeviceStep(uint64_t now_us);
  bool AwaitingCancelAnswers() const;
  // Alg. 3 from the settled sessions of the running step.
  std::vector<uint32_t> Candidates() const;
  std::vector<uint32_t> Largest() const;

  // Comparison steps: each has its own service, with session ids offset so
  // that the ids devices see stay unique for the whole job (the service
  // keeps every session it ever added; one for the whole job would hold
  // iterations x edges of them). A step therefore also waits for the
  // answers to its cancels (a cancelled party holds its slot until it
  // answers); only after a step's deadline can a device still hold a slot
  // the next step's service counts free, and a device that refuses a start
  // beyond its slots only aborts that comparison (no information).
  void NewComparisonStep(Step step, uint64_t now_us);
  void AddSession(uint32_t a, uint32_t b, SessionValues values);
  void CloseComparisonStep();
  void Pump(uint64_t now_us);
  std::vector<RoundStart> StartReport(uint64_t now_us);
  void Finish(uint64_t now_us);
  void WriteOutputs();

  LumosMcmcOptions options_;
  std::vector<uint32_t> participants_;
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::map<uint32_t, Device> devices_;
  std::mt19937_64 rng_;
  uint8_t salt_[nodefl::compare::kCompareSaltBytes] = {};
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0;
  uint32_t pending_keys_ = 0;     // round 1: participants neither answered nor absent
  uint32_t pending_reports_ = 0;  // round 3: asked, neither reported nor offline

  // Round 2.
  Step step_ = Step::kNeighbourCompare;
  uint64_t step_started_us_ = 0, iteration_started_us_ = 0;
  bool picking_u2_ = false;  // the running Alg. 3 is line 6's (else line 2's)
  std::vector<uint32_t> candidates_;  // Alg. 3 operation 1's answer, ascending
  LumosMcmcIteration current_;
  std::optional<nodefl::lumos::McmcMoveDone> answer_;  // the picked device's kMcmcMoveDone for the running step
  std::unique_ptr<server::compare_service::ComparisonService> service_;  // the running comparison step's
  std::vector<SessionValues> values_;  // index = the service's session id - 1
  uint32_t id_base_ = 0;               // wire id = id_base_ + the service's id
  std::vector<RoundStart> starts_;     // round starts decided while driving round 2

  std::vector<LumosMcmcIteration> iterations_;
  LumosMcmcSummary summary_;
  std::vector<DeviceData> data_;
};

}  // namespace nodefl::server::jobs
