// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of strict FedWalk: the cluster-histogram job
// (docs/fedwalk.md, "Strict mode: cluster histograms"). Device side:
// sdk/fedwalk/.../histogram_role.h; contract: histogram_format.h; math:
// server/fedwalk/histogram_walks.
//
//   release round r = 1 .. R (R = 1 for a random partition, 2 for the
//     refined one; histogram_plan.h): the round's parameters and public
//     partition to every participant still in the job; each uploads its
//     noised cluster histogram and reports its ledger.
//   between rounds (refined partition only): the next partition is
//     computed from the previous round's uploads (worker thread).
//   walks and training (worker thread): walks generated from the last
//     round's histograms (post-processing: no privacy cost, whatever
//     gamma and l), SkipGram as FedWalk Sec. 4.4; the embeddings go to
//     output_dir/embeddings.w2v.
// A round ends when every device in it reported or at its deadline; a
// device that misses it, reports an error or uploads something malformed is
// recorded with the reason and left out of later rounds. No device message
// goes through the relay and no device asks for anything by name.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/server/fedwalk/histogram_walks/cluster_histograms.h"
#include "nodefl/server/fedwalk/histogram_walks/histogram_plan.h"
#include "nodefl/server/fedwalk/histogram_walks/histogram_walks.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_options.h"
#include "nodefl/server/jobs/compute_executor.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct FedWalkHistogramOptions {
  uint64_t job_id = 1;
  fedwalk::HistogramPlanOptions plan;
  fedwalk::HistogramWalkOptions walks;  // threads and seed are set from below
  fedwalk::SkipGramOptions skipgram;    // threads and seed are set from below
  uint32_t round_deadline_ms = 300'000;
  unsigned compute_threads = 2;
  uint64_t seed = 0;  // 0: from std::random_device (partitions, walks, training)
  std::string output_dir;
  // Where the heavy math runs; nullptr: a thread of its own
  // (compute_executor.h). Tests pass a ManualExecutor.
  ComputeExecutor* executor = nullptr;
};

struct HistogramDeviceRecord {
  enum class State : uint8_t { kReleasing, kDone, kMissed, kFailed };
  State state = State::kReleasing;
  uint32_t round = 0;         // the round it is in (or failed in)
  bool has_upload = false;    // for the current round
  double epsilon = 0;         // summed over its reports
  uint32_t releases = 0;
  std::string why;            // for kMissed / kFailed
};

struct HistogramJobSummary {
  uint32_t participants = 0;
  uint32_t completed = 0;  // released in every round
  uint32_t missed = 0;
  uint32_t failed = 0;
  std::vector<fedwalk::PlannedRelease> plan;
  std::vector<double> seconds_rounds;  // per release round
  double seconds_refine = 0, seconds_walks = 0, seconds_training = 0;
  uint64_t upload_bytes = 0;
  uint64_t partition_bytes = 0;  // one copy of each round's artefact, summed
  fedwalk::HistogramWalkStats walks;
  double training_tokens_per_second = 0;
  uint64_t training_epochs = 0;  // SkipGram passes over the walks (chosen from them by default)
  double epsilon_max = 0, epsilon_median = 0;  // per-device totals the devices reported
  double epsilon_planned = 0;                  // the plan's total per device
  uint64_t over_plan = 0;   // devices that reported more than the plan (a bug or a lie)
  uint64_t protocol_errors = 0;
  uint64_t repeated_uploads = 0;
  std::string embeddings_path;
  std::string error;
};

class FedWalkHistogramJob final : public Job {
 public:
  FedWalkHistogramJob(FedWalkHistogramOptions options, std::vector<uint32_t> participants);
  ~FedWalkHistogramJob() override;

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const HistogramJobSummary& summary() const { return summary_; }
  const std::map<uint32_t, HistogramDeviceRecord>& devices() const { return devices_; }
  // The last round's partition and histograms (what the walks came from).
  const fedwalk::ClusterHistograms& histograms() const { return *histograms_; }

 private:
  enum class Phase { kIdle, kReleasing, kRefining, kWalking, kFinished };

  std::vector<RoundStart> StartRound(uint64_t now_us, std::vector<uint16_t> partition);
  bool RoundComplete() const;
  void CloseRound(uint64_t now_us);
  void Fail(HistogramDeviceRecord& record, std::string why);
  void RunRefine();
  void RunWalksAndTraining();
  void Finish();
  void WriteOutputs() const;

  FedWalkHistogramOptions options_;
  std::vector<uint32_t> participants_;
  uint32_t vertex_count_ = 1;
  std::map<uint32_t, HistogramDeviceRecord> devices_;
  Phase phase_ = Phase::kIdle;
  uint32_t round_ = 0;  // 1-based release round in progress
  uint64_t round_started_us_ = 0;
  HistogramJobSummary summary_;
  std::unique_ptr<fedwalk::ClusterHistograms> histograms_ = std::make_unique<fedwalk::ClusterHistograms>();

  // Worker thread (refinement, walks and training).
  ComputeTask worker_;  // the heavy math, on options_.executor
  std::atomic<bool> worker_done_{false};
  std::atomic<uint64_t> progress_done_{0}, progress_total_{0};
  std::atomic<int> worker_stage_{0};  // 0 refining, 1 walking, 2 training
  std::vector<uint16_t> next_partition_;
};

}  // namespace nodefl::server::jobs
