// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosTrainRole: the device side of JOB_KIND_LUMOS_TRAIN (contract:
// protocol/lumos/train_format.h; server: server/jobs lumos_train_job.h;
// docs/lumos.md, "Training"). Lumos Sec. VI on one device: its tree from
// the neighbours its trimming job left it, the neighbours' features one-bit
// encoded (Eq. 26-27), a two-layer GCN or GAT (sdk/gnn) run every epoch
// with the server's parameters, leaf embeddings pooled across devices
// (Eq. 31), the loss at its own node (Eq. 32), and its gradient
// contribution back to the server. The arithmetic is TreeTrainer's
// (tree_trainer.h); this class moves its inputs and outputs.
//
// Privacy (docs/privacy.md, "Lumos training"):
//   paper mode: own leaves carry the raw features and the loss the raw
//     label, as the paper does; both reach neighbours (through embeddings
//     and leaf gradients) and the server (through gradients) unbounded,
//     and the ledger records them as such (it refuses them unless its
//     budget allows unbounded releases).
//   strict mode: every released value is post-processing of two
//     accounted releases: the one-bit encoding of the features (the union
//     of what the keepers receive, at the job's epsilon; the own leaves
//     carry the same union, so embeddings add nothing), and the label,
//     released once per job by k-ary randomised response at the label
//     budget and only then used in the loss.
// Both are recorded in the device's ledger before anything leaves, and a
// release past its budget is refused (the device then takes no part).
//
// Secure sum (TrainParameters::secure_sum, the server's lumos_secure_sum;
// train_format.h): in a training epoch the device's gradient contribution
// and the metrics the server needs as sums go into the epoch's secure
// aggregation (through a secagg::AggregationLink, aggregation_link.h, as
// secagg/aggregate_role.h does) instead of kTrainGradient and
// kTrainMetrics records: the server then learns the sums over the devices,
// not a device's gradient, loss, split's label or prediction. The link
// seals to neighbours and partners with the role's keys and keys other
// mask peers on demand in its own cache, their messages waiting in held
// slots until then; every seal shares the job's one counter. What the server
// still learns per device: the evaluation epoch's metrics (as without
// secure sum), the link task's binned scores, the summary, and who took
// part in each aggregation.
//
// Memory: TrainPeer and KeyedPeer per neighbour (caller spans), and one
// caller byte buffer from which each job's tree, parameters, gradients and
// feature buffers are carved (TrainRoleMemory() says how much a shape and
// a workload need); secure sum adds its input vector there and takes the
// rest from TrainSecureSumMemory. No heap in this code.
#pragma once

#include <cstdint>

#include "nodefl/core/arena.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/lumos/tree_trainer.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/privacy/one_bit_encoder.h"
#include "nodefl/protocol/lumos/train_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/peer_key_table.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/seal.h"
#include "nodefl/secagg/aggregation_client.h"
#include "nodefl/secagg/aggregation_link.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::lumos {

struct TrainPeer {
  uint32_t id = 0;
  bool keep = false;  // this device keeps the neighbour (it is in N_u), from the trimming job
  // Set by the role for each job: the neighbour has a leaf pair in this
  // device's tree (kept, and, for the link task, on a training edge).
  bool in_tree = false;
  // Link task. partner: a device the server drew (not a neighbour).
  // link_use: a neighbour's edge split (0 train, 1 validation, 2 test), a
  // partner's use (0 training negative, 1 evaluation negative).
  bool partner = false;
  uint8_t link_use = 0;
  uint32_t slot = 0;             // its pooled embedding's row in the role's buffer
  uint32_t pooled_epoch = 0;     // the epoch of the pooled embedding held
  uint32_t loss_row = 0;         // 1 + its row in the loss's gradient (0: not in the loss)
  bool pooled_due = false;       // our pooled embedding to send it
  bool pooled_gradient_due = false;
  bool pooled_gradient_received = false;
  // Setup.
  bool notice_sent = false;
  bool notice_received = false;
  bool keeps_me = false;         // the neighbour keeps this device (its notice said so)
  bool absent = false;           // takes no part (its notice said so, or its keys failed)
  bool features_due = false;     // features to send it (it keeps us)
  bool features_received = false;
  // Its notice, sealed, when it came before this device had its keys (the
  // neighbour had ours first): opened once the keys are derived.
  uint8_t held[48] = {};
  uint8_t held_size = 0;
  uint32_t kept_index = 0;    // k: its pair in this device's tree (when keep)
  uint32_t keeper_index = 0;  // its slot among this device's keepers (when keeps_me)
  // The current epoch.
  bool embedding_due = false;      // ours to send (we keep it)
  uint32_t embedding_epoch = 0;    // the epoch of its leaf embedding for us (it keeps us), held until pooled
  bool gradient_due = false;       // ours to send (it keeps us)
  bool gradient_received = false;  // our leaf's gradient (we keep it)
  uint32_t gone_epoch = 0;         // the server gave up on it in this epoch (kTrainPeersGone)
};

// Secure sum's caller memory, sized for the most mask peers an aggregation
// may give the device (the server's lumos_secure_peers, about 2 log2 n,
// and a few more: its random graph tops devices up): the client's records
// (secagg/aggregation_client.h), a key record per mask peer that is not a
// neighbour or partner, and held slots (about one per mask peer). Its
// input vector comes from the job memory (TrainRoleMemory).
struct TrainSecureSumMemory {
  Span<secagg::AggregationPeer> peers;
  Span<secagg::Share> shares;  // 2 per peer
  Span<uint64_t> points;       // 1 per peer
  Span<roles::KeyedPeer> keys;
  Span<secagg::HeldMessage> held;
};

// Privacy ledger phase ids of this job.
inline constexpr uint16_t kLedgerPhaseLumosFeatures = 40;
inline constexpr uint16_t kLedgerPhaseLumosLabel = 41;
inline constexpr uint16_t kLedgerPhaseLumosTraining = 42;  // paper mode's unbounded releases

// k-ary randomised response: `label` with probability e^eps / (e^eps + k -
// 1), otherwise one of the other k - 1 labels uniformly; eps-LDP for the
// label. kInvalidArgument for label >= classes, classes 0 or a bad eps; the
// DRBG's error if it failed.
Result<uint32_t> RandomisedResponse(Drbg& noise, uint32_t label, uint32_t classes, double epsilon);

// Bytes of job memory a device with `workload` kept neighbours and
// `degree` neighbours needs for `p` (0 if p describes no valid model).
// `partners`: the link task's partner capacity (SetLinkMemory). With
// p.secure_sum, the aggregation's input vector too.
size_t TrainRoleMemory(const TrainParameters& p, uint32_t workload, uint32_t degree, uint32_t partners = 0);

class LumosTrainRole final : public device::Role {
 public:
  struct Stats {
    uint32_t epochs = 0;  // epochs whose contribution was uploaded
    uint32_t messages_sent = 0;
    uint32_t messages_received = 0;
    uint32_t rejected = 0;
    uint32_t stale = 0;
    uint32_t key_failures = 0;
    uint64_t bytes_up = 0;    // gradient and metrics records
    uint64_t bytes_down = 0;  // parameter records
    // Secure sum.
    uint32_t aggregations = 0;    // training epochs whose masked vector went out
    uint64_t clipped = 0;         // gradient values clipped to the job's clip
    uint32_t held_dropped = 0;    // aggregation messages with no held slot free
    uint32_t peers_gone = 0;      // peers an epoch went on without (kTrainPeersGone)
  };
  // The job's counts, the aggregation link's included.

  // `peers[i].id` and `keys[i].id`: the neighbours, ascending, the same in
  // both. `memory`: the job buffer. `random` draws keys, dropout, the
  // feature encoding's partition and the label's randomised response
  // (through `noise`, the device's noise DRBG, crypto/rng.h).
  LumosTrainRole(uint32_t own_id, Span<TrainPeer> peers, Span<roles::KeyedPeer> keys, ByteSpan memory,
                 const tls::TlsCredentials& credentials, crypto::RandomFunction random, void* random_context,
                 Drbg& noise, PrivacyLedger& ledger);
  ~LumosTrainRole();
  LumosTrainRole(const LumosTrainRole&) = delete;
  LumosTrainRole& operator=(const LumosTrainRole&) = delete;

  // The link task's partners (drawn by the server, not neighbours): one
  // TrainPeer and one key record each, up to the jobs' negatives +
  // eval_negatives (a device without enough refuses a link job). Before
  // Init; optional for node classification.
  void SetLinkMemory(Span<TrainPeer> partners, Span<roles::KeyedPeer> partner_keys) {
    partners_ = partners;
    partner_keys_ = partner_keys;
  }
  // Secure sum's memory (before Init; without it a secure-sum job is
  // refused with kResourceExhausted). `random` draws the aggregations'
  // round keys, self seeds and shares (seed it from real entropy; not the
  // noise DRBG, crypto/rng.h).
  void SetSecureSumMemory(const TrainSecureSumMemory& memory, Drbg& random) {
    secure_memory_ = memory;
    secure_random_ = &random;
  }
  // kInvalidArgument for differing or unsorted neighbour lists;
  // kFailedPrecondition for credentials without identity or CA.
  Status Init();
  void SetPairKeySource(const seal::PairKeySource& source) {
    keys_.SetPairKeySource(source);
    pair_source_ = source;  // a copy: the link that takes it is built per job
  }
  // The device's own data: features in [0, 1] (binary in the shared
  // datasets; d must match the job's), and its label (-1: none). The
  // caller keeps `features` alive.
  void SetData(Span<const float> features, int32_t label);
  // The peers' keep flags now hold the trimming job's result.
  void Bind() { bound_ = true; }
  bool bound() const { return bound_; }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  Stats stats() const;
  uint32_t workload() const { return workload_; }
  uint32_t keepers() const { return keepers_; }
  uint32_t partners() const { return partners_used_; }
  // The label the loss uses (strict: after randomised response); -1: none.
  int32_t training_label() const { return train_label_; }
  const OneBitCost& feature_cost() const { return feature_cost_; }
  const TreeTrainer<float>& trainer() const { return trainer_; }
  // Secure sum: the aggregation client of the job (nullptr without one).
  const secagg::AggregationClient* aggregation_client() const { return link_ != nullptr ? &link_->client() : nullptr; }

 private:
  enum class Phase : uint8_t { kIdle, kKeys, kNotices, kFeatures, kSetupReported, kEpoch, kReporting, kDone };
  // Link task: kLinkEmbeddings (pooled embeddings exchanged with every
  // neighbour and partner) and kLinkGradients (the loss's gradients at
  // theirs) come between pooling and the leaf gradients.
  enum class EpochStep : uint8_t { kParams, kEmbeddings, kLinkEmbeddings, kLinkGradients, kGradients, kUpload, kDone };

  TrainPeer* FindPeer(uint32_t id);
  bool link() const { return params_.task == TrainTask::kLink; }
  void AddPartners(ConstByteSpan entries);
  Status FlushPeer(TrainPeer& peer, device::DeviceSession& session);
  void TryLinkLoss();
  void TryFinishLink();
  void StartLeafGradients();
  Status UploadScores(device::DeviceSession& session);
  Status StartJob(const nodefl_wire_Envelope& message);
  Status Setup(const TrainParameters& p);
  void StartEpoch(const TrainParameters& p, uint32_t round);
  void HandleData(const nodefl_wire_JobData& data, uint32_t round);
  // kTrainPeersGone: the epoch goes on without what those peers still owed.
  void MarkPeersGone(ConstByteSpan bytes);
  // Gone this epoch before its pooled embedding came (link task): not in
  // the loss, and owed no gradient.
  bool PooledGone(const TrainPeer& peer) const { return peer.gone_epoch == epoch_ && peer.pooled_epoch != epoch_; }
  void HandleCertificate(const nodefl_wire_PeerCertificate& certificate);
  void HandleDelivery(const nodefl_wire_Envelope& message);
  // Opens a relayed message with the sender's keys (its replay window
  // checked) and hands the plaintext on by its first byte: the aggregation
  // client's tag, or a TrainMessageType.
  void OpenRelayed(uint32_t src, roles::KeyedPeer& keys, ConstByteSpan sealed);
  void OnPeerMessage(TrainPeer& peer, ConstByteSpan plaintext);
  // Secure sum.
  bool SecureSumMemoryFits(const TrainParameters& p) const;
  void StartAggregationLink();
  void DestroyAggregationLink();
  void OnAggregationRecord(uint32_t kind, ConstByteSpan bytes, uint32_t round);
  Status PumpAggregation(device::DeviceSession& session);
  Status EncodeSecureInput();
  Status UploadSecure(device::DeviceSession& session);
  void EndJobKeys();
  Status EncodeFeatures();
  Status RecordReleases();
  Status ReleaseLabel();
  void FillOwnLeaves();
  void TryPool();
  Status SealAndRelay(uint32_t dst, roles::KeyedPeer& keys, ConstByteSpan plaintext, device::DeviceSession& session);
  Status SendMessage(TrainPeer& peer, TrainMessageType type, ConstByteSpan body, device::DeviceSession& session);
  Status Flush(device::DeviceSession& session);
  Status Upload(device::DeviceSession& session);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);

  uint32_t own_id_;
  Span<TrainPeer> peers_;
  Span<roles::KeyedPeer> key_records_;
  ByteSpan memory_;
  Arena arena_;
  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;
  Drbg& noise_;
  PrivacyLedger& ledger_;
  roles::PeerKeyTable keys_;
  roles::JobKeyAnnouncer job_key_;
  Span<const float> own_features_;
  Span<const float> model_input_;  // own_features_, or their projection (TrainParameters::projection)
  int32_t label_ = -1;
  bool bound_ = false;

  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  TrainParameters params_;
  gnn::ModelShape shape_;
  Status refusal_;               // setup refused: reported in round 1
  uint32_t workload_ = 0;
  uint32_t keepers_ = 0;
  uint32_t notices_ = 0;          // received
  uint32_t features_needed_ = 0;  // from the neighbours we keep
  uint32_t features_got_ = 0;
  uint32_t keys_settled_ = 0;
  uint8_t split_ = 0;
  bool split_known_ = false;
  int32_t train_label_ = -1;
  OneBitParams feature_params_;
  OneBitCost feature_cost_;
  uint64_t next_counter_ = 1;
  // Job memory.
  TreeTrainer<float> trainer_;
  Span<float> params_buffer_;
  Span<float> grads_;
  Span<float> keeper_embeddings_;  // keepers x out
  Span<float> own_encoding_;       // d: the union of the bins, recovered (strict own leaves)
  Span<uint8_t> packed_;           // keepers x OneBitPackedSize(d): each keeper's bin, ready to send
  Span<float> scratch_;            // max(d, out) floats; in an epoch: the pool's gradient
  Span<uint32_t> receiver_of_dim_; // d: the encoding's partition
  // Link task.
  Span<TrainPeer> partners_;
  Span<roles::KeyedPeer> partner_keys_;
  uint32_t partners_used_ = 0;
  Span<float> pooled_rows_;    // (degree + partners) x out: their pooled embeddings
  Span<float> loss_rows_;      // the same shape: positives then negatives, gathered for the loss
  Span<float> loss_grads_;     // the same shape: the loss's gradient at each gathered row
  Span<float> received_grad_;  // out: the gradients at h_u the partners sent, summed
  Span<uint8_t> scores_;       // 2 x (degree + partners): kind | bin per scored pair
  uint32_t score_count_ = 0;
  size_t scores_cursor_ = 0;
  uint32_t expected_pooled_ = 0;
  uint32_t expected_pooled_gradients_ = 0;
  uint32_t pooled_got_ = 0;
  uint32_t pooled_gradients_got_ = 0;
  bool pool_gradient_ready_ = false;  // scratch_ holds the gradient every leaf of u receives
  // The current epoch.
  uint32_t epoch_ = 0;
  uint32_t epoch_round_ = 0;
  bool epoch_train_ = false;
  EpochStep step_ = EpochStep::kDone;
  uint32_t params_next_ = 0;      // the next parameter index expected
  uint32_t embeddings_got_ = 0;   // from keepers
  uint32_t gradients_got_ = 0;    // from kept neighbours
  uint32_t expected_embeddings_ = 0;
  uint32_t expected_gradients_ = 0;
  bool pooled_ = false;
  size_t upload_cursor_ = 0;
  bool metrics_sent_ = false;
  TrainMetrics metrics_;
  uint32_t report_round_ = 0;
  bool summary_sent_ = false;
  roles::ReportRepeater report_;
  uint32_t scratch_words_[seal::kMaxSealPlaintextBytes / 4] = {};
  uint8_t* const plain_ = reinterpret_cast<uint8_t*>(scratch_words_);
  // Secure sum. The link is built in place for each job that asks for it
  // (its memory includes the job's input vector).
  TrainSecureSumMemory secure_memory_;
  Drbg* secure_random_ = nullptr;
  seal::PairKeySource pair_source_;  // the default: verify the certificate and derive
  alignas(secagg::AggregationLink) unsigned char link_storage_[sizeof(secagg::AggregationLink)] = {};
  secagg::AggregationLink* link_ = nullptr;
  Span<uint32_t> secure_input_;  // job memory: TrainSecureLength(parameters) words
  bool secure_epoch_ = false;    // the current epoch sums through the aggregation
  float secure_clip_ = 0.0f;     // the current epoch's codes (train_format.h)
  int8_t secure_scale_log2_ = 0;
  int8_t secure_loss_scale_log2_ = 0;
  uint32_t epoch_aggregation_ = 0;  // the aggregation started in this epoch's round (0: not yet)
  bool secure_input_set_ = false;
  Stats stats_;
};

}  // namespace nodefl::lumos
