// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of JOB_KIND_LUMOS_TRIM, the second stage of the
// lumos-trees plan (after the secure-compare job, Lumos Alg. 1): drains to
// public thresholds until the maximum workload is the optimum (docs/lumos.md,
// "Draining to a public threshold"; contract:
// sdk/protocol/public/nodefl/protocol/lumos/trim_format.h; the threshold
// schedule: server/lumos/trimming threshold.h).
//
//   round 1 (ready): devices take over their greedy result and report.
//     Devices that refuse (no greedy result) or miss the deadline take no
//     further part; their neighbours are told (kTrimAbsent).
//   drain steps (round = step + 1): the public threshold; every active
//     device sends its step outcome. The step ends when all did, or at its
//     deadline (then the silent devices are treated as possibly still over
//     the threshold, and become absent).
//   report (the last round): workloads, the local coverage check and, in
//     paper mode, every device's kept neighbours.
//
// What the server learns is listed in docs/privacy.md ("Lumos tree
// trimming"): per step, which devices were above the threshold and how many
// edges each root shed; at the end, each device's workload (and, in paper
// mode, its kept neighbours). Never a degree in any message.
//
// Outputs (output_dir): lumos-workloads.tsv (per device: greedy workload,
// final workload), lumos-trim-steps.tsv (one line per step) and, in paper
// mode, lumos-trees.tsv (each device's kept neighbours).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/protocol/limits.h"
#include "nodefl/protocol/lumos/trim_format.h"
#include "nodefl/server/jobs/job.h"
#include "nodefl/server/lumos/trimming/threshold.h"

namespace nodefl::server::jobs {

struct LumosTrimOptions {
  uint64_t job_id = 1;
  uint32_t round_deadline_ms = 300'000;  // the ready and report rounds
  uint32_t step_deadline_ms = 120'000;   // one drain step
  uint32_t max_steps = 100'000;          // a safety net; the method ends long before
  bool upload_kept = false;  // paper mode: devices report their kept neighbours, the server checks every edge
  std::string output_dir;
};

struct LumosTrimStep {
  uint32_t step = 0;
  uint32_t threshold = 0;
  uint32_t devices = 0;   // active devices asked
  uint32_t outcomes = 0;  // outcomes received in time
  uint32_t roots = 0;
  uint64_t relief = 0;
  bool still_over = false;
  bool deadline = false;  // ended by its deadline
  double seconds = 0;
};

struct LumosTrimSummary {
  uint32_t participants = 0;
  uint32_t ready = 0;
  std::vector<uint32_t> refused;       // no greedy result (round 1 code)
  std::vector<uint32_t> missed_ready;  // no round-1 report in time
  std::vector<uint32_t> absent;        // every device excluded from the drains, in order
  std::vector<uint32_t> missed_report;
  std::vector<LumosTrimStep> steps;
  std::vector<uint32_t> thresholds;  // one per drain
  uint32_t optimum = 0;              // the schedule's lowest feasible threshold
  bool certified = false;            // every device took part throughout: the maximum is the optimum
  uint32_t max_workload = 0, greedy_max = 0;
  uint32_t start_max = 0;  // after the tie drop, before the drains
  double mean_workload = 0, greedy_mean = 0;
  uint64_t messages = 0;             // device-to-device searches and echoes (devices' own counts)
  uint64_t uncovered_local = 0;      // devices' own coverage checks, summed
  uint64_t unsettled = 0;            // edges kept after an aborted comparison (devices' counts, summed)
  uint64_t uncovered_edges = 0;      // paper mode: edges neither endpoint reported keeping
  uint64_t unverified_edges = 0;     // paper mode: an endpoint did not report, the other does not keep it
  uint64_t protocol_errors = 0;
  uint64_t ignored = 0;              // late or repeated records and reports
  double seconds_ready = 0, seconds_drains = 0, seconds_report = 0;
  std::string workloads_path, steps_path, trees_path;
  std::string error;
};

class LumosTrimJob final : public Job {
 public:
  // `edges`: the edge set the greedy job compared (a < b), for the lower
  // bound of the schedule and, in paper mode, the coverage check.
  LumosTrimJob(LumosTrimOptions options, std::vector<uint32_t> participants,
               std::vector<std::pair<uint32_t, uint32_t>> edges);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM; }
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

  const LumosTrimSummary& summary() const { return summary_; }
  // Every participant, ascending (the training stage starts from them).
  const std::vector<uint32_t>& participants() const { return participants_; }
  // Final workloads of the devices that reported.
  std::map<uint32_t, uint32_t> Workloads() const;

  // Wire size of one relayed trimming message (sealed), for byte counts.
  static constexpr uint64_t kSealedMessageBytes = nodefl::lumos::kTrimMessageBytes + protocol::kSealedOverheadBytes;

 private:
  enum class Phase { kIdle, kReady, kDraining, kReport, kFinished };
  struct Device {
    bool ready = false;      // reported round 1 with OK
    bool responded = false;  // round 1 answered at all
    bool absent = false;
    bool offline = false;    // a round start could not be delivered
    uint32_t outcome_step = 0;
    bool has_summary = false;
    nodefl::lumos::TrimSummary ready_summary, summary;
    bool in_report = false;  // asked for the final report
    bool reported = false;   // final report
    std::vector<uint32_t> kept;
  };

  std::vector<RoundStart> StartStep(uint64_t now_us);
  std::vector<RoundStart> EndStep(uint64_t now_us, bool deadline);
  std::vector<RoundStart> StartReport(uint64_t now_us);
  void MarkAbsent(uint32_t device);
  void Finish(uint64_t now_us);
  void WriteOutputs();
  uint32_t ReportRound() const { return controller_.step() + 1; }

  LumosTrimOptions options_;
  std::vector<uint32_t> participants_;
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::map<uint32_t, Device> devices_;
  nodefl::server::lumos::DrainController controller_;
  std::vector<uint32_t> absent_unannounced_;
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0, drains_started_us_ = 0;
  LumosTrimStep current_;
  bool drain_begins_ = true;  // the next step starts a drain
  uint32_t pending_ready_ = 0;    // ready round: participants neither answered nor absent
  uint32_t waiting_ = 0;          // drain step: active devices without an outcome
  uint32_t pending_reports_ = 0;  // report round: asked, neither reported nor offline
  bool any_absent_ = false;
  LumosTrimSummary summary_;
  std::vector<DeviceData> data_;
};

}  // namespace nodefl::server::jobs
