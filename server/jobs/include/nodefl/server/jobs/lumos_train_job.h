// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side coordinator of JOB_KIND_LUMOS_TRAIN, the optional third stage
// of the lumos-trees plan (after trimming): federated training of the tree
// GNN, Lumos Sec. VI (contract:
// sdk/protocol/public/nodefl/protocol/lumos/train_format.h).
//
//   round 1 (setup): the model's shape and privacy mode; every participant
//     gets its node's split (kTrainAssignment, SplitNodes over the
//     participants in ascending id order). Devices that refuse or miss the
//     deadline take no part in the epochs.
//   round 1 + e (epoch e): the current parameters (kTrainParams records).
//     Each device uploads its gradient contribution (kTrainGradient records)
//     and then its metrics (kTrainMetrics). The epoch ends when every device
//     asked is done or at its deadline; devices that missed it are
//     stragglers of that epoch only (they get the next epoch). The server
//     divides the summed contributions by the number of losses taken (the
//     mean loss over the training nodes, pooled per Lumos Eq. 31) and
//     applies Adam.
//   round epochs + 2: one evaluation epoch (train = false, no update): its
//     accuracies are the final ones.
//   last round (report): each device's kTrainSummary (workload, messages,
//     the feature release's epsilon).
//
// Link prediction (options.task kLink, Lumos Sec. VI-C; no labels, no
// classifier): round 1 sends every participant its partners first
// (kTrainPartners records: LinkPartners over the participants in ascending
// id order, seeded by split_seed, which has no node split to seed in this
// task), then its kTrainAssignment record (byte 0, no meaning: the devices
// wait for it, so it comes last). In each epoch a device uploads its
// gradient records, then kTrainLinkScores records (the binned scores of its
// held-out edges and evaluation partners), then its metrics, whose loss is
// the sum of its loss terms and `terms` their number. The server divides
// the summed contributions by the summed terms of the trained devices (the
// mean over every loss term), and ranks each epoch's scores: validation
// and test edges against the evaluation partners (one negative histogram
// for both), ROC-AUC over bins (BinnedAuc).
//
// What the server learns (docs/privacy.md): per device and epoch the
// gradient contribution of its tree and its metrics (split, whether its
// node is labelled, its loss and whether its prediction was right), and at
// the end its summary. Never a feature, a label or a neighbour. In link
// mode: the pairing it drew itself; per device and epoch its gradient, its
// loss sum and its number of terms (its training-edge neighbours plus the
// training partners it used); and the binned scores of its held-out edges
// and evaluation partners (by kind, without ids), which reveal how many
// held-out edges it has. Counts against the pairing can also reveal that a
// drawn partner was skipped as a neighbour, i.e. that this drawn pair is an
// edge (rare in a sparse graph); no other edge is ever named.
//
// Secure sum (options.secure_sum, lumos_secure_sum; train_format.h): each
// training epoch, after the parameters, the job adds one secure aggregation
// (server/secagg AggregationService: robust mode, the sparse mask graph,
// every step's deadline the epoch's) over the devices asked, of
// TrainSecureLength(parameters) words, forwards its records in TakeData
// (in the epoch's round) and routes the devices' kAgg* records to it. The
// epoch ends when the aggregation settles: done, the job decodes the sums
// (the gradient at 2^scale_log2 codes per unit, the counts and losses of
// TrainSecureWord), divides by the summed divisor and steps Adam, and the
// epoch's accuracy and loss come from the summed counts; aborted (or
// refused, or sums that cannot be counts), the epoch updates nothing and
// the summary counts it. The devices the aggregation dropped are the
// epoch's stragglers. The scales are the largest powers of two with
// n * round(clip * scale) < 2^31 for the n devices asked (so no sum
// wraps), sent in every epoch's parameters. What the server learns then,
// per training epoch: the sums over the devices that completed the
// aggregation (gradient, losses taken and their terms, loss sums, per
// split the labelled and correctly predicted nodes, values clipped) and
// who completed it; per device nothing of its gradient or its metrics.
// The evaluation epoch, the link task's scores and the report round stay
// as above.
//
// Outputs (output_dir): lumos-train-epochs.tsv (one line per epoch; node
// and link mode have their own columns, see WriteOutputs; secure sum adds
// the clipped values and the aggregation's outcome) and
// lumos-train-parameters.bin (the final parameters, float32 little endian).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/gnn/model_shape.h"
#include "nodefl/protocol/lumos/train_format.h"
#include "nodefl/server/jobs/job.h"
#include "nodefl/server/lumos/training/adam.h"
#include "nodefl/server/lumos/training/link_task.h"
#include "nodefl/server/lumos/training/splits.h"
#include "nodefl/server/secagg/aggregation_service.h"

namespace nodefl::server::jobs {

struct LumosTrainOptions {
  uint64_t job_id = 1;
  gnn::ModelShape shape;  // features and classes filled by the caller (the server does not know the dataset)
  bool paper = false;     // privacy mode: paper (raw own features on own leaves) or strict
  bool ego_star = false;  // Lumos w.o. VN: the ego network instead of the tree
  float epsilon = 2;      // the feature budget (Lumos Sec. VIII-A)
  float label_epsilon = 2;  // strict mode: the label's randomised-response budget (train_format.h)
  uint32_t epochs = 300;  // Lumos Sec. VIII-A
  uint64_t seed = 0;      // parameters' initialisation; 0: random_device
  uint64_t split_seed = 1;  // node: SplitNodes; link: LinkPartners (the partner draw)
  // The task (train_format.h). kLink: shape.classes must be 0 (no
  // classifier).
  nodefl::lumos::TrainTask task = nodefl::lumos::TrainTask::kNode;
  uint8_t negatives = 4;       // link: training partners per device at most (training matchings)
  uint8_t eval_negatives = 2;  // link: evaluation partners per device at most
  uint64_t edge_seed = 1;      // link: EdgeSplitOf's seed, for the devices
  // The public random projection of the features before encoding
  // (train_format.h, ProjectFeatures): the model's first layer sees
  // `projection` dimensions instead of shape.features (0: none).
  uint16_t projection = 0;
  uint64_t projection_seed = 1;
  nodefl::server::lumos::AdamOptions adam;
  // Secure sum (above): the per-value clip of a device's gradient
  // contribution, the mask peers per device (0: 2 * ceil(log2 n)) and the
  // shares that rebuild a secret (0: a strict majority of the peers), as
  // the AggregationService takes them. The clip's default is the power of
  // two above the largest value measured on Cora in strict mode (520 over
  // TLS, 555 in nodefl-lumos-train-sim, 20 epochs; docs/lumos.md): nothing
  // clipped there, and the code's scale (2^9 for 2,708 devices) trained to
  // the accuracy of float sums.
  bool secure_sum = false;
  float secure_clip = 1024.0f;
  uint32_t secure_peers = 0;
  uint32_t secure_threshold = 0;
  uint32_t round_deadline_ms = 300'000;  // setup and report
  uint32_t epoch_deadline_ms = 120'000;
  std::string output_dir;
};

struct LumosTrainEpoch {
  uint32_t epoch = 0;
  bool train = true;     // false: the evaluation epoch
  bool updated = false;  // Adam stepped
  uint32_t devices = 0;  // devices asked
  uint32_t done = 0;     // metrics (or a report) in time
  uint32_t stragglers = 0;
  uint32_t trained = 0;    // metrics with a loss taken (node: the gradient's divisor)
  uint32_t discarded = 0;  // contributions dropped for a malformed record
  double loss = 0;         // mean training loss (link: per loss term)
  // Node mode.
  double accuracy[nodefl::server::lumos::kSplits] = {0, 0, 0};
  uint32_t labelled[nodefl::server::lumos::kSplits] = {0, 0, 0};
  double validation_loss = 0;
  // Link mode: the trained devices' loss terms (the gradient's divisor);
  // ROC-AUC of the validation [1] and test [2] edges against the negatives
  // (NaN when either has no score; [0] unused: no training edge is scored);
  // the scores counted: edges per split, evaluation partners.
  uint64_t terms = 0;
  double auc[nodefl::server::lumos::kSplits] = {0, 0, 0};
  uint64_t positives[nodefl::server::lumos::kSplits] = {0, 0, 0};
  uint64_t negatives = 0;
  uint64_t bytes_down = 0;  // parameters (secure sum: and the aggregation's records), per device
  uint64_t bytes_up = 0;    // gradient (and link score; secure sum: aggregation) records, mean per device that uploaded any
  bool deadline = false;    // ended by its deadline
  double seconds = 0;
  // Plain training epochs: the largest |value| in any device's gradient
  // contribution (what a secure-sum clip must cover).
  double max_abs_gradient = 0;
  // Secure sum: the aggregation's outcome ("done", "aborted (reason):
  // message", "refused: why", "implausible sums"), the gradient values
  // clipped and the devices that clipped any (sums), and the sealed bytes a
  // device sends its mask peers (mean).
  std::string aggregation;
  uint64_t clipped = 0;
  uint64_t clippers = 0;
  uint64_t peer_bytes = 0;
};

struct LumosTrainSummary {
  uint32_t participants = 0;
  uint32_t ready = 0;
  std::vector<uint32_t> refused;       // round 1 code != 0
  std::vector<uint32_t> missed_setup;  // no round-1 report in time (or unreachable)
  std::vector<uint32_t> missed_report;
  uint32_t epochs_updated = 0;
  double final_accuracy[nodefl::server::lumos::kSplits] = {0, 0, 0};  // the evaluation epoch's
  uint32_t final_labelled[nodefl::server::lumos::kSplits] = {0, 0, 0};  // ... over this many nodes
  double final_auc[nodefl::server::lumos::kSplits] = {0, 0, 0};       // link: the evaluation epoch's
  uint32_t best_epoch = 0;
  double best_validation = 0;  // node: accuracy; link: ROC-AUC
  double test_at_best = 0;
  uint64_t partner_pairs[2] = {0, 0};  // link: pairs drawn, training and evaluation
  uint64_t stragglers = 0;  // straggler-epochs, summed
  // Devices given up on during an epoch (offline past the server's grace),
  // summed over epochs: each was named to the epoch's other devices
  // (kTrainPeersGone), so that none waits for what it owed them.
  uint64_t gone = 0;
  uint64_t discarded = 0;   // contributions dropped, summed
  uint64_t protocol_errors = 0;
  uint64_t ignored = 0;  // late or repeated records and reports
  uint64_t bytes_down_per_device_epoch = 0;
  uint64_t bytes_up_per_device_epoch = 0;  // mean over the training epochs
  double max_abs_gradient = 0;             // plain mode: the largest over the training epochs
  // Secure sum: training epochs whose aggregation was done / aborted (or
  // refused, or implausible), gradient values clipped, and the mean sealed
  // bytes per device and epoch to its mask peers.
  uint32_t aggregations_done = 0;
  uint32_t aggregations_aborted = 0;
  uint64_t clipped = 0;
  uint64_t peer_bytes_per_device_epoch = 0;
  uint32_t summaries = 0;
  double epsilon_all_receivers = 0;  // the largest over the devices' summaries
  double epsilon_per_receiver = 0;
  double seconds_setup = 0, seconds_epochs = 0, seconds_report = 0;
  std::string epochs_path, parameters_path;
  std::string error;
};

class LumosTrainJob final : public Job {
 public:
  LumosTrainJob(LumosTrainOptions options, std::vector<uint32_t> participants);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN; }
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

  const LumosTrainSummary& summary() const { return summary_; }
  const std::vector<LumosTrainEpoch>& epochs() const { return epochs_; }
  const std::vector<float>& parameters() const { return params_; }
  // The mean gradient the last update stepped Adam with (empty before one).
  const std::vector<float>& last_mean_gradient() const { return mean_gradient_; }
  const gnn::ParamLayout& layout() const { return layout_; }
  const std::vector<uint32_t>& participants() const { return participants_; }
  // The summaries the devices sent in the report round.
  std::map<uint32_t, nodefl::lumos::TrainSummary> Summaries() const;

 private:
  enum class Phase { kIdle, kSetup, kEpoch, kReport, kFinished };
  struct Chunk {
    uint32_t first = 0;
    std::vector<float> values;
  };
  struct Device {
    nodefl::server::lumos::Split split = nodefl::server::lumos::Split::kTrain;
    bool responded = false;  // round 1 answered (or given up on)
    bool ready = false;      // round 1 OK: takes part in the epochs
    // The current round.
    bool asked = false;     // in the current round's devices
    bool inactive = false;  // unreachable for the rest of the current round
    bool done = false;      // epoch: metrics (or a report) arrived; report round: reported
    bool bad = false;       // epoch: a malformed record, the contribution is dropped
    uint64_t bytes_up = 0;
    std::vector<Chunk> chunks;   // epoch: gradient records until the metrics arrive
    std::vector<uint8_t> scores;  // link epoch: (kind, bin) pairs until the metrics arrive
    bool has_summary = false;
    nodefl::lumos::TrainSummary summary;
  };

  std::vector<RoundStart> StartEpoch(uint64_t now_us);
  std::vector<RoundStart> EndEpoch(uint64_t now_us, bool deadline);
  std::vector<RoundStart> StartReport(uint64_t now_us);
  std::vector<RoundStart> OnGradient(uint32_t device, uint32_t round, const std::vector<uint8_t>& bytes);
  std::vector<RoundStart> OnMetrics(uint32_t device, uint32_t round, const std::vector<uint8_t>& bytes,
                                    uint64_t now_us);
  std::vector<RoundStart> OnLinkScores(uint32_t device, uint32_t round, const std::vector<uint8_t>& bytes);
  // Link mode, round 1: the partner records then the assignment, per device.
  void SendPartners();
  void MarkDone(Device& d);
  // A malformed record: the device's whole contribution to this epoch is
  // dropped (a protocol error).
  void Spoil(Device& d);
  // Adds the device's link scores and loss terms into the epoch's.
  void CountLinkMetrics(Device& d, const nodefl::lumos::TrainMetrics& m);
  void CountLinkScores(Device& d);
  // Secure sum.
  bool SecureEpoch() const { return options_.secure_sum && phase_ == Phase::kEpoch && current_.train; }
  bool PickSecureScales(size_t devices);
  void StartAggregation(const std::vector<uint32_t>& devices, uint64_t now_us);
  std::vector<RoundStart> OnAggregationRecord(uint32_t device, uint32_t kind, const std::vector<uint8_t>& bytes,
                                              uint64_t now_us);
  // The settled aggregation into the epoch: who is in, the sums, traffic.
  void SettleAggregation();
  bool DecodeSecureSums(const std::vector<uint32_t>& sum, size_t included);
  void CountAggregationTraffic(const secagg::AggregationResult& r);
  void FlushAggregationRecords(uint32_t round);
  bool link() const { return options_.task == nodefl::lumos::TrainTask::kLink; }
  // Adds the device's records into the epoch's sum (train epochs); false
  // when they overlap (a protocol error: an index counted twice).
  bool Merge(Device& d);
  std::vector<uint8_t> Parameters(nodefl::lumos::TrainPhase phase, uint32_t epoch, bool train) const;
  void Finish(uint64_t now_us);
  void Fail(std::string error, uint64_t now_us);
  void WriteOutputs();
  uint32_t EpochRound(uint32_t epoch) const { return 1 + epoch; }
  uint32_t EvaluationEpoch() const { return options_.epochs + 1; }
  uint32_t ReportRound() const { return options_.epochs + 3; }

  LumosTrainOptions options_;
  std::vector<uint32_t> participants_;
  std::map<uint32_t, Device> devices_;
  gnn::ParamLayout layout_;
  std::vector<float> params_, sum_;
  nodefl::server::lumos::Adam adam_;
  uint8_t salt_[16] = {};
  Phase phase_ = Phase::kIdle;
  uint32_t epoch_ = 0;  // the running epoch (1 ... epochs + 1)
  LumosTrainEpoch current_;
  uint64_t round_started_us_ = 0, epochs_started_us_ = 0;
  uint32_t waiting_ = 0;  // devices of the current round neither done nor inactive
  // Given up on in the current epoch and not yet named to the others.
  std::vector<uint32_t> gone_;
  // Names gone_ to every device of the epoch still at work on it.
  void TellGone();
  double loss_sum_ = 0, validation_loss_sum_ = 0, train_loss_sum_ = 0;
  uint32_t train_labelled_ = 0;
  uint32_t correct_[nodefl::server::lumos::kSplits] = {0, 0, 0};
  // Link mode: the epoch's score histograms (indexed by LinkScoreKind - 1:
  // validation edges, test edges, negatives) and the loss terms behind
  // loss_sum_.
  nodefl::server::lumos::ScoreHistogram histogram_[3] = {};
  uint64_t loss_terms_ = 0;
  uint64_t bytes_up_total_ = 0;
  uint32_t uploaders_ = 0;
  std::vector<LumosTrainEpoch> epochs_;
  LumosTrainSummary summary_;
  std::vector<DeviceData> data_;
  std::vector<float> mean_gradient_;
  // Secure sum: one service for the job (its aggregations are numbered
  // from 1), this epoch's aggregation (0: none), the codes sent.
  std::unique_ptr<secagg::AggregationService> service_;
  uint32_t aggregation_ = 0;
  int8_t secure_scale_log2_ = 0;
  int8_t secure_loss_scale_log2_ = 0;
};

}  // namespace nodefl::server::jobs
