// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of FedWalk's federated random walks and the
// SkipGram training on them (FedWalk Sec. 4.3-4.4,
// Alg. 1; docs/fedwalk.md). Device side: sdk/fedwalk/.../walk_role.h;
// contract: sdk/protocol/public/nodefl/protocol/fedwalk/walk_format.h. Runs after
// the HCT job, on the devices that completed it.
//
//   round 1 (keys): parameters (l, p, ε, ε per encoding, a fresh salt) to
//     every device; each derives keys with its neighbours and reports.
//   round 2 (walks): gamma walks start at every device, at most
//     `max_in_flight` at a time; devices forward them to each other through
//     the relay (sealed) and the last device sends the encoded walk back.
//     Every walk issued ends as completed (l entries), dead end (fewer
//     entries: a device without neighbours), or lost with a reason (the
//     start device offline, dropped by a device, no result before the
//     walk deadline). A lost walk is issued again, up to max_attempts;
//     a start the device had no room for (kDroppedStarts: nothing was
//     encoded) is not a loss: it is offered again after start_retry_ms,
//     up to max_start_refusals times, without counting as an attempt;
//     nothing disappears without being counted.
//   round 3 (report): devices report their ledger (encodings, ε).
//   training: SkipGram on the encoded walks (worker threads); the
//     embeddings are written to output_dir/embeddings.w2v.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/server/jobs/compute_executor.h"
#include "nodefl/server/jobs/job.h"
#include "nodefl/server/jobs/recent_latencies.h"

namespace nodefl::server::fedwalk {
class WalkCorpus;
}

namespace nodefl::server::jobs {

struct FedWalkWalkOptions {
  uint64_t job_id = 2;
  nodefl::fedwalk::WalkParameters params;  // salt filled in by the job
  uint32_t vertex_count = 0;               // ids 0 .. n-1
  uint32_t walks_per_vertex = 80;          // gamma
  uint32_t max_in_flight = 0;              // 0: 4 per participant
  uint32_t walk_timeout_ms = 300'000;      // a walk without a result by then is lost
  // A walk without a result after stall_factor times the 99th percentile
  // of the recent walks' latencies (issue to result; recent_latencies.h),
  // and at least stall_floor_ms, is lost as stalled, well before
  // walk_timeout_ms: a walk a device lost without a word must not idle the
  // job's tail. 0: only walk_timeout_ms.
  uint32_t stall_factor = 8;
  uint32_t stall_floor_ms = 10'000;
  uint32_t max_attempts = 2;               // issues per walk slot, first included
  // A start refused for room waits this long before it is offered again
  // (the device's queue drains meanwhile), and a slot refused this many
  // times is lost (lost_dropped).
  uint32_t start_retry_ms = 100;
  uint32_t max_start_refusals = 64;
  uint32_t round_deadline_ms = 300'000;    // rounds 1 and 3
  // SkipGram (Sec. 4.4): word2vec-style skip-gram with negative sampling.
  uint32_t dim = 128;
  uint32_t window = 10;
  uint32_t negative = 5;
  uint32_t epochs = 0;  // 0: chosen from the walks (skipgram/corpus_coverage.h)
  unsigned threads = 2;
  uint64_t seed = 0;  // 0: from std::random_device (walk order, training)
  std::string output_dir;
  double score_sensitivity = 0;  // Δu of the run's codebook, for the summary
  bool scaled_encoder = false;   // the codebook uses the sensitivity-scaled score
  // Where the heavy math runs; nullptr: a thread of its own
  // (compute_executor.h). Tests pass a ManualExecutor.
  ComputeExecutor* executor = nullptr;
};

struct WalkSummary {
  uint32_t participants = 0;
  uint32_t keys_ready = 0;
  uint64_t walk_slots = 0;   // gamma x participants
  uint64_t issued = 0;       // issues, re-issues included
  uint64_t completed = 0;    // slots with a full walk
  uint64_t dead_ends = 0;    // slots ended short (kept in the corpus)
  uint64_t lost = 0;         // slots lost for good
  uint64_t reissued = 0;
  uint64_t lost_offline = 0, lost_dropped = 0, lost_deadline = 0;  // per issue
  uint64_t lost_stalled = 0;   // per issue: past the stall window (FedWalkWalkOptions::stall_factor)
  uint64_t start_refusals = 0; // starts a device had no room for, offered again later (not losses)
  double stall_window_s = 0;   // the last stall window applied (0: none yet)
  uint64_t late_results = 0;   // results for a walk already counted lost
  uint64_t bad_results = 0;    // malformed or unknown walk ids
  uint64_t tokens = 0;
  double hops_mean = 0;        // device-to-device messages per completed walk
  double hops_stderr = 0;
  double theorem42 = 0;        // Eq. 21 for (l, p)
  double seconds_keys = 0, seconds_walks = 0, seconds_report = 0, seconds_training = 0;
  double training_tokens_per_second = 0;
  uint64_t training_epochs = 0;  // SkipGram passes over the walks (chosen from them by default)
  double epsilon_max = 0, epsilon_median = 0;  // devices' reported totals for this job
  // Per edge (a step counts every later hop of its walk) and delta; both
  // reported by the devices. An edge's figure is the sum of its two
  // endpoints' (at most twice the maximum).
  double edge_epsilon_max = 0, edge_epsilon_median = 0;
  double delta_max = 0;
  uint64_t devices_unbounded = 0;               // devices whose rows share no output
  uint64_t devices_unbounded_against_server = 0;
  uint64_t encodings = 0;                      // devices' reported releases
  uint64_t protocol_errors = 0;
  std::string embeddings_path;
  std::string error;
};

class FedWalkWalkJob final : public Job {
 public:
  FedWalkWalkJob(FedWalkWalkOptions options, std::vector<uint32_t> participants);
  ~FedWalkWalkJob() override;

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t kind, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  std::vector<DeviceData> TakeData() override;
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;
  // A function of its inputs (salt and seed through FillJobEntropy; the
  // SkipGram run at the end starts again if it was cut off): a server
  // restart continues it from its journal (Job::continuable).
  bool continuable() const override { return true; }
  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const WalkSummary& summary() const { return summary_; }
  const fedwalk::WalkCorpus& corpus() const { return *corpus_; }
  // Messages per completed walk, one entry per walk (for tests).
  const std::vector<uint16_t>& hops() const { return hops_; }

 private:
  enum class Phase { kIdle, kKeys, kWalks, kReport, kTraining, kFinished };
  struct Slot {
    uint32_t start = 0;
    uint8_t attempts = 0;
    bool done = false;
    uint16_t refusals = 0;  // starts refused for room
  };
  struct InFlight {
    uint32_t slot = 0;
    uint64_t issued_us = 0;
  };

  std::vector<RoundStart> StartWalkRound(uint64_t now_us);
  std::vector<RoundStart> StartReportRound(uint64_t now_us);
  void IssueWalks(uint64_t now_us);
  void LoseIssue(uint32_t walk_id, uint64_t now_us, uint64_t* reason_counter);
  // A start the device had no room for: offered again later (FedWalkWalkOptions::start_retry_ms).
  void RefuseStart(uint32_t walk_id, uint64_t now_us);
  void CloseSlot(uint32_t slot, bool lost);
  void StartTraining(uint64_t now_us);
  void RunTraining();
  void Finish();

  FedWalkWalkOptions options_;
  std::vector<uint32_t> participants_;
  std::map<uint32_t, uint8_t> device_state_;  // 0 waiting keys, 1 ready, 2 reported round 3, 3 missed
  struct DeviceLedger {
    double epsilon = 0, edge_epsilon = 0, delta = 0;
    uint64_t releases = 0;
    bool unbounded = false, unbounded_against_server = false;
  };
  std::map<uint32_t, DeviceLedger> device_ledger_;
  Phase phase_ = Phase::kIdle;
  uint64_t round_started_us_ = 0;
  WalkSummary summary_;

  std::vector<Slot> slots_;
  std::deque<uint32_t> ready_slots_;                 // to issue (first issues and re-issues)
  struct RefusedStart {
    uint32_t slot = 0;
    uint64_t retry_at_us = 0;
  };
  std::deque<RefusedStart> refused_starts_;          // in refusal order, so retry times ascend
  std::unordered_map<uint32_t, InFlight> in_flight_;  // by walk id
  std::deque<uint32_t> in_flight_order_;             // walk ids in issue order, for timeouts
  uint32_t next_walk_id_ = 1;
  uint64_t slots_closed_ = 0;
  std::map<uint32_t, std::vector<uint8_t>> outgoing_;  // start records being built, by device
  std::vector<DeviceData> data_;
  std::unique_ptr<fedwalk::WalkCorpus> corpus_;
  std::vector<uint16_t> hops_;
  RecentLatencies latencies_;  // issue to result of completed walks

  ComputeTask trainer_;  // the heavy math, on options_.executor
  std::atomic<bool> training_done_{false};
  std::atomic<uint64_t> trained_tokens_{0};
};

}  // namespace nodefl::server::jobs
