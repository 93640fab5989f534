// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of the FedWalk HCT job (seed
// FedWalk Sec. 4.2 and Alg. 2; docs/fedwalk.md). Device
// side: sdk/fedwalk/public/nodefl/fedwalk/hct_role.h; the contract between
// them: sdk/protocol/public/nodefl/protocol/fedwalk/hct_format.h.
//
//   round 1 (binning): parameters + the bin plan to every participant; each
//     uploads its noised degree vector c_v and reports its ledger.
//   round 2 (matrix): the dictionary of every c_v to every device that gave
//     one; each uploads M_v (paper mode) or its noised degree histogram
//     (strict mode) and reports its ledger.
//   compute (on worker threads): all-pairs dissimilarity (DTW / EMD), the
//     HCT by agglomerative clustering, the Eq. 12 codebook.
//   round 3 (publish): the tree and the codebook to every device in the
//     dictionary; each keeps its neighbours' rows and reports how many.
// Each round ends when every device in it reported or at its deadline; a
// device that misses a deadline (or fails) is recorded and left out of the
// later rounds, and the summary lists it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/common/hct_transcript.h"
#include "nodefl/server/jobs/compute_executor.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct FedWalkHctOptions {
  uint64_t job_id = 1;
  nodefl::fedwalk::HctParameters params;  // bins = 0: floor(ln |V|); vertex_count is set by the job
  std::string linkage = "average";        // average | complete | single
  uint32_t round_deadline_ms = 300'000;
  unsigned compute_threads = 2;
  uint64_t bin_plan_seed = 0;             // 0: from std::random_device
  std::string output_dir;                 // empty: write nothing
  bool scaled_encoder = false;            // Eq. 12 with the score divided by 2Δu
  double score_clip = 0;                  // Eq. 10 clipped to [-B, 0], Δu = B; 0: no clip
  // Where the heavy math runs; nullptr: a thread of its own
  // (compute_executor.h). Tests pass a ManualExecutor.
  ComputeExecutor* executor = nullptr;
};

// Per-device state, for the summary and for tests.
struct HctDeviceRecord {
  enum class State : uint8_t { kBinning, kMatrix, kPublish, kDone, kMissed, kFailed };
  State state = State::kBinning;
  uint32_t failed_round = 0;     // for kMissed / kFailed
  std::string why;               // for kMissed / kFailed
  bool has_vector = false;
  bool has_upload = false;
  double epsilon = 0;            // summed over its reports
  uint32_t releases = 0;
  bool unbounded = false;
  uint32_t codebook_rows_kept = 0;
  uint32_t neighbours_in_dictionary = 0;
};

struct HctSummary {
  uint32_t participants = 0;
  uint32_t vertices_in_tree = 0;
  uint32_t completed = 0;          // devices that finished all three rounds
  uint32_t missed = 0;             // missed a round (its deadline, or unreachable)
  uint32_t unreachable = 0;        // ... of which given up as unreachable before the deadline
  uint32_t failed = 0;             // reported an error or sent bad data
  double seconds_binning = 0, seconds_matrix = 0, seconds_dissimilarity = 0, seconds_clustering = 0,
         seconds_codebook = 0, seconds_publish = 0;
  uint64_t dissimilarity_bytes = 0;  // the condensed float32 matrix
  uint64_t tree_bytes = 0, codebook_bytes = 0, dictionary_bytes = 0, bin_plan_bytes = 0;
  double max_truncated_mass = 0;
  double score_sensitivity = 0;     // Δu of the codebook's score (the clip B if set)
  double max_abs_score = 0;         // the largest unclipped |score| of the run
  double epsilon_per_encoding = 0;  // what one Eq. 12 draw costs (2εΔu raw, ε scaled)
  double epsilon_max = 0, epsilon_median = 0;  // per-device totals of this job
  uint32_t unbounded_devices = 0;               // devices that made a release with no DP bound
  uint64_t protocol_errors = 0;
  uint64_t repeated_uploads = 0;   // re-sent after a reconnect, ignored
};

class FedWalkHctJob final : public Job {
 public:
  FedWalkHctJob(FedWalkHctOptions options, std::vector<uint32_t> participants);
  ~FedWalkHctJob() override;

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  // A device that owes the running round and cannot be reached (its start
  // was undeliverable, or it stayed offline past the server's grace)
  // misses the round now instead of holding it to the deadline.
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;
  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const nodefl::fedwalk::HctParameters& parameters() const { return params_; }
  const HctSummary& summary() const { return summary_; }
  const std::map<uint32_t, HctDeviceRecord>& devices() const { return devices_; }
  const fedwalk::HctTranscript& transcript() const { return transcript_; }
  // Published artefacts (empty until round 3 starts).
  const std::vector<uint8_t>& tree_bytes() const { return *tree_bytes_; }
  const std::vector<uint8_t>& codebook_bytes() const { return *codebook_bytes_; }
  // Set when the compute phase failed (no tree).
  const std::string& compute_error() const { return compute_error_; }
  // Devices that completed all three rounds (they can take part in walks).
  std::vector<uint32_t> CompletedDevices() const;
  // The walk job's inputs (fedwalk_walk_handoff.h); empty after a compute
  // error (no walk job follows).
  std::vector<uint8_t> HandOff() const override;
  bool scaled_encoder() const { return options_.scaled_encoder; }

 private:
  enum class Phase { kIdle, kBinning, kMatrix, kComputing, kPublish, kFinished };

  std::vector<RoundStart> StartMatrixRound(uint64_t now_us);
  void StartCompute(uint64_t now_us);
  std::vector<RoundStart> StartPublishRound(uint64_t now_us);
  void Finish();
  bool RoundComplete(HctDeviceRecord::State state) const;
  void MarkMissed(HctDeviceRecord::State state, uint32_t round);
  // One device misses `round`, for the reason given.
  static void MarkMissed(HctDeviceRecord& record, uint32_t round, std::string why);
  void Fail(HctDeviceRecord& record, uint32_t round, std::string why);
  void RunCompute();  // worker thread
  void WriteOutputs();

  FedWalkHctOptions options_;
  nodefl::fedwalk::HctParameters params_;
  std::vector<uint32_t> participants_;
  std::map<uint32_t, HctDeviceRecord> devices_;
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0;
  HctSummary summary_;
  fedwalk::HctTranscript transcript_;
  std::vector<float> vectors_;  // vertex_count x bins, NaN = none

  // Compute phase.
  ComputeTask worker_;  // the heavy math, on options_.executor
  std::atomic<bool> compute_done_{false};
  fedwalk::HctPipelineProgress progress_;
  std::vector<uint32_t> leaves_;       // leaf index -> device id
  std::string compute_error_;
  std::shared_ptr<std::vector<uint8_t>> tree_bytes_ = std::make_shared<std::vector<uint8_t>>();
  std::shared_ptr<std::vector<uint8_t>> codebook_bytes_ = std::make_shared<std::vector<uint8_t>>();
};

}  // namespace nodefl::server::jobs
