// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// KcagcJob: JOB_KIND_KCAGC (contract: protocol/kcagc/job_format.h), kCAGC
// across L participants over TLS, the server as the paper's P_L.
//
// Round 1. Every participant gets the parameters, then its welcome (its
// index). Once all have answered kKcagcReady (the same n), the coordinator
// (kcagc_coordinator.h, the same steps as server/kcagc/sim) runs on a
// worker thread against KcagcRemoteParticipants; its requests come through
// the KcagcChannel and are served here, on the runner's strand: their
// instruction records go out, each sum runs as one secure aggregation over
// the stage's participants (server/secagg AggregationService: the full
// mask graph among them, robust or paper mode, and every participant must
// report, since a sum of distances without some participant's columns is
// no distance), and Protocol 3 line 2's local clusters are collected.
// In the joint mode (not the paper's) each sum is one step of the subspace
// iteration: the block Q_t goes to every participant first (n b floats as
// array runs), and the server clusters U itself at the end.
// The final clustering goes to every participant.
// Round 2. The participants report; the job writes kcagc-assignment.tsv
// (node<TAB>cluster) in the output folder and logs the run: the scores
// against kcagc_labels (evaluation only), the secure sums (summed scalars,
// the paper's unit) beside our formula and the paper's, aggregation
// rounds, bytes and wall time.
//
// Failure ends the run at once and clearly (kcagc_failed in the log,
// kKcagcAbort to the participants, then round 2): an aggregation that
// aborts (a participant silent past a step's deadline, or gone), a
// participant that refuses an instruction or becomes unreachable, a
// participant not ready in time, participants that disagree on n.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nodefl/protocol/kcagc/job_format.h"
#include "nodefl/server/jobs/compute_executor.h"
#include "nodefl/server/jobs/job.h"
#include "nodefl/server/jobs/kcagc_channel.h"
#include "nodefl/server/jobs/kcagc_coordinator.h"
#include "nodefl/server/jobs/kcagc_remote_participants.h"
#include "nodefl/server/kcagc/metrics.h"
#include "nodefl/server/secagg/aggregation_service.h"

namespace nodefl::server::jobs {

struct KcagcJobOptions {
  uint64_t job_id = 0;
  nodefl::kcagc::KcagcParameters params;  // salt from the OS; participants filled in by the job
  KcagcRunSettings settings;              // the coordinator's (mode, k, k̂, seeding, Q, restarts, seed)
  uint64_t step_timeout_us = 300'000'000;  // each aggregation step; readiness; local clusters
  uint32_t report_deadline_ms = 60000;
  std::string output_dir;                 // kcagc-assignment.tsv; empty: none
  std::string labels_path;                // for the log line only
  std::vector<int32_t> labels;            // evaluation only; empty: no scores
  std::string error;                      // settings the job cannot run with: it ends at once, saying this
};

class KcagcJob final : public Job {
 public:
  KcagcJob(KcagcJobOptions options, std::vector<uint32_t> participants);
  ~KcagcJob() override;

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_KCAGC; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  std::vector<DeviceData> TakeData() override;
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;

  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  // After the run (tests): the coordinator's summary, why the run failed
  // (empty when it did not), the scores when labels were given.
  const std::optional<KcagcRunSummary>& summary() const { return summary_; }
  const std::string& failure() const { return failure_; }
  const std::optional<kcagc::ClusteringScores>& scores() const { return scores_; }

 private:
  enum class Phase : uint8_t { kIdle, kPreparing, kRunning, kClosing, kReporting, kFinished };

  // One participant's Protocol 1 upload, as it arrives.
  struct LocalUpload {
    std::vector<uint32_t> values;
    uint32_t received = 0;
  };

  int32_t IndexOf(uint32_t device) const;
  void OnReady(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us);
  void OnLocalClusters(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us);
  void OnRefuse(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us);
  void StartWorker(uint64_t now_us);
  // Serves the worker's requests until one must wait (an aggregation, an
  // upload) or none is queued.
  void Pump(uint64_t now_us);
  bool Serve(KcagcRequest request, bool wants_answer, uint64_t now_us);
  // An answer is due when the work of the request taken last is done.
  bool SettleAggregation(uint64_t now_us);
  bool SettleCollection(uint64_t now_us);
  void AfterWorker(uint64_t now_us);
  void Fail(std::string why, uint64_t now_us);
  void Abort();
  void TakeServiceRecords();
  void WriteOutputs();
  std::vector<RoundStart> Advance(uint64_t now_us);
  void SetProgress(std::string line);

  KcagcJobOptions options_;
  std::vector<uint32_t> participants_;  // device ids, ascending: index l = position
  secagg::AggregationService service_;
  Phase phase_ = Phase::kIdle;
  std::vector<DeviceData> outbox_;
  std::set<uint32_t> unreachable_;
  uint64_t begin_us_ = 0, deadline_us_ = 0;
  // Readiness.
  std::vector<bool> ready_;
  uint32_t nodes_ = 0;
  uint64_t columns_ = 0;
  // The request being served.
  std::string serving_;           // its `what`
  bool awaiting_answer_ = false;
  uint32_t aggregation_ = 0;      // the service's id, 0: none running
  bool collecting_ = false;
  std::vector<LocalUpload> local_;
  // Counters.
  uint64_t aggregations_ = 0;
  uint64_t agg_bytes_up_ = 0, agg_bytes_down_ = 0;  // aggregation records (JobData payloads)
  uint64_t peer_messages_ = 0;                      // sealed device-to-device messages the aggregations relay
  uint64_t aggregation_us_ = 0, unmask_us_ = 0;     // the aggregations' wall time, and the server's unmasking in it
  uint64_t instruction_bytes_ = 0;                  // instruction records to the participants
  uint64_t upload_bytes_ = 0;                       // the participants' kKcagc* uploads
  uint64_t protocol_errors_ = 0;
  uint64_t run_started_us_ = 0, run_ended_us_ = 0;
  // Results.
  std::string failure_;
  std::optional<KcagcRunSummary> summary_;
  std::optional<kcagc::ClusteringScores> scores_;
  std::string evaluation_note_;
  std::string output_note_;
  std::set<uint32_t> reported_;
  uint32_t clean_reports_ = 0;
  uint64_t reports_started_us_ = 0;
  mutable std::mutex progress_mutex_;  // the worker's progress lines
  std::string progress_;
  // The worker and what it shares with the strand. Declared last: the task
  // is destroyed (and waited for) first, after the destructor closed the
  // channel, while everything it uses still exists.
  KcagcChannel channel_;
  std::unique_ptr<KcagcRemoteParticipants> remote_;
  Result<KcagcRunSummary> result_ = Status::Cancelled();  // written by the worker before it returns
  ComputeTask task_;
};

}  // namespace nodefl::server::jobs
