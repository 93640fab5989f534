// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_LUMOS_TRAIN between the device role (sdk/lumos,
// train_role.h) and the server's coordinator (server/jobs,
// lumos_train_job.h): Lumos Sec. VI, synchronous epochs of a tree GNN
// trained on every device, embeddings pooled across devices (Eq. 31), the
// server averaging the devices' gradient contributions and applying Adam.
// All integers little endian, floats IEEE-754 binary32 (binary64 where
// said).
//
// The job follows tree construction in the lumos-trees plan: a device takes
// the kept neighbours its trimming job left it (N_u, wl = |N_u|).
//
// Every round's JobStart.parameters = TrainParameters (kTrainParametersBytes).
//   round 1, kSetup: the model's shape, the privacy mode and the feature
//     budget. The server sends each device a kTrainAssignment record (its
//     node's split). The device fetches its neighbours' keys and sends each
//     neighbour a kKeepNotice (whether it keeps that neighbour), so every
//     device learns its keepers (the devices whose trees hold a leaf for
//     it). It then sends each keeper a kFeatures message: its features
//     one-bit encoded (Lumos Eq. 26, privacy/one_bit_encoder.h), the d
//     dimensions dealt into as many bins as it has keepers, keeper k
//     receiving bin k. When it holds the features of every neighbour it
//     keeps, it reports (kFailedPrecondition: no trimming result or no
//     features; kResourceExhausted: its tree does not fit).
//   round 1 + e, kEpoch (epoch e = 1, 2, ...): kTrainParams records carry the
//     current parameters. The device runs its tree forward and sends each
//     kept neighbour v a kLeafEmbedding (the embedding of v's leaf in its
//     tree). With every keeper's embedding in hand it pools its own
//     embedding (own leaves and the keepers' leaves), takes the loss when
//     its node is labelled and in the training split (and `train` is set),
//     and sends each keeper a kLeafGradient (the pool's gradient divided by
//     the pool's size; zero without a loss). With every kept neighbour's
//     gradient in hand it back-propagates its tree and uploads its gradient
//     contribution (kTrainGradient records, then one kTrainMetrics record),
//     then reports the round. A message of another epoch is dropped.
//   last round, kReport: the device sends kTrainSummary and reports.
//
// Link prediction (task kLink, Lumos Sec. VI-C "unsupervised learning"):
// no labels; the edges are split 80/5/15 by EdgeSplitOf(edge_seed, u, v),
// a public rule both endpoints evaluate alike (the server never needs the
// edges). A device's tree holds only the kept neighbours whose edge is in
// the training split (held-out edges never carry messages). In round 1 the
// server also sends kTrainPartners records: devices drawn uniformly by the
// server (random pairings over the participants, so each device gets at
// most `negatives` training and `eval_negatives` evaluation partners, and
// the pairing is symmetric); a drawn partner that is in fact a neighbour is
// skipped by both ends, silently. Keys to partners are fetched like
// neighbours' keys, and every partner and neighbour gets a kKeepNotice.
// The kTrainAssignment record comes after the partner records. In each
// epoch, after pooling, a device sends its pooled embedding h_u
// (kPooledEmbedding) to every neighbour and partner taking part; with all
// theirs in it takes the loss of Eq. 33 (sign fixed) over its positives
// (kept neighbours on training edges) and training partners, sends each
// of them the gradient at its embedding (kPooledGradient; zero to the
// rest), adds what it receives to the gradient at h_u, and goes on as in
// the node task (leaf gradients to keepers, backward, upload). It uploads
// kTrainLinkScores (the scores h_u . h_v of its held-out edges and its
// evaluation partners, each pair counted at its lower id) before its
// kTrainMetrics.
//
// Device-to-device plaintexts (sealed with the pair's job keys, relayed):
// type (1) | epoch (4) | body. kKeepNotice: keeps (1). kFeatures: the
// packed encoding (OneBitPackedSize(d) bytes, privacy/one_bit_encoder.h).
// kLeafEmbedding, kLeafGradient: out floats.
//
// Secure sum (TrainParameters::secure_sum, the server's lumos_secure_sum):
// in a training epoch (train set) a device sends neither kTrainGradient
// nor kTrainMetrics. After the parameters the server starts one secure
// aggregation (protocol/secagg/aggregation_format.h: its kAgg* records
// follow the parameters on the device's stream, its sealed peer messages
// start with kAggPeerMessageTag, never a TrainMessageType) over the devices
// asked, and each device's input is TrainSecureLength(parameters) words:
// its gradient contribution in the fixed-point code of (secure_clip,
// 2^secure_scale_log2), then the kTrainSecureExtras words of
// TrainSecureWord. The server learns the sums only. The link task still
// uploads its kTrainLinkScores before its masked vector. The device
// reports the round once its masked vector is out (or its part ended);
// the epoch ends when the aggregation settles, and devices it dropped are
// that epoch's stragglers. The evaluation epoch (train clear) runs as
// without secure sum.
//
// Scales: the server picks 2^secure_scale_log2 as the largest power of two
// with n * round(secure_clip * scale) < 2^31 for the n devices asked (the
// sum of n codes cannot wrap; secagg/fixed_point.h), and the loss's scale
// alike for kTrainSecureLossClip; counts are plain integers, at most
// kTrainSecureCountClip per device. A sum is then off by at most
// n / (2 scale) per value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::lumos {

inline constexpr uint8_t kTrainVersion = 3;

enum class TrainPhase : uint8_t { kSetup = 1, kEpoch = 2, kReport = 3 };
enum class TrainTask : uint8_t { kNode = 0, kLink = 1 };

struct TrainParameters {
  TrainPhase phase = TrainPhase::kSetup;
  bool paper = false;     // privacy mode: paper (raw own features on own leaves) or strict
  bool ego_star = false;  // Lumos w.o. VN: the ego network instead of the tree
  uint8_t layer = 1;      // gnn::LayerKind: 1 GCN, 2 GAT
  uint32_t features = 0;  // d
  uint16_t hidden = 16;
  uint16_t out = 16;
  uint8_t heads = 4;
  uint16_t classes = 0;
  float dropout = 0.01f;
  float epsilon = 2.0f;     // the feature budget (Lumos Sec. VIII-A: 2)
  // Strict mode: the label is released once per job by randomised response
  // at this budget, and only the noised label is trained on (paper mode:
  // the label itself, an unbounded release).
  float label_epsilon = 2.0f;
  uint32_t parameters = 0;  // the flat vector's length (a check on both sides' layouts)
  uint8_t salt[16] = {};
  uint32_t epoch = 0;  // kEpoch: 1, 2, ...
  bool train = true;   // kEpoch: dropout on, losses taken, gradients uploaded
  TrainTask task = TrainTask::kNode;
  // kLink: partners per device at most (training negatives, evaluation
  // negatives), and the seed of the edge split.
  uint8_t negatives = 0;
  uint8_t eval_negatives = 0;
  uint64_t edge_seed = 0;
  // A public random projection of the features before encoding
  // (ProjectFeatures): the model sees `projection` dimensions instead of
  // `features` (0: no projection).
  uint16_t projection = 0;
  uint64_t projection_seed = 0;
  // Training epochs sum through secure aggregation (above): the per-value
  // clip of the gradient contribution and the fixed-point scales (powers
  // of two) of the gradient and of the loss. Checked only when set.
  bool secure_sum = false;
  float secure_clip = 0.0f;
  int8_t secure_scale_log2 = 0;
  int8_t secure_loss_scale_log2 = 0;
};
// version | phase | flags (bit 0 paper, bit 1 ego star, bit 2 train,
// bit 3 link task, bit 4 secure sum) | layer | features (4) | hidden (2) |
// out (2) | heads | classes (2) | dropout (4) | epsilon (4) | parameters (4) |
// salt (16) | epoch (4) | label epsilon (4) | negatives | eval negatives |
// edge seed (8) | projection (2) | projection seed (8) | secure clip (4) |
// secure scale log2 (1, signed) | secure loss scale log2 (1, signed)
// (classes may be 0 for the link task: no classifier)
inline constexpr size_t kTrainParametersBytes = 77;

// Secure sum: the words after the gradient in a device's input, each a sum
// over the devices once aggregated. Counts are integers; the two losses
// use the loss's code (clip kTrainSecureLossClip).
enum TrainSecureWord : uint32_t {
  kSecureTrained = 0,         // 1 when the device took a loss (node: the gradient's divisor)
  kSecureTerms = 1,           // its loss terms (node: 1 when trained; link: the divisor)
  kSecureClippers = 2,        // 1 when it clipped a value (gradient or loss)
  kSecureClipped = 3,         // values it clipped (at most kTrainSecureCountClip)
  kSecureLoss = 4,            // its loss when trained (link: the sum over its terms)
  kSecureValidationLoss = 5,  // node: its loss when labelled and in the validation split
  kSecureLabelled = 6,        // + split (3 words), node: 1 when labelled
  kSecureCorrect = 9,         // + split (3 words), node: 1 when labelled and predicted right
  kTrainSecureExtras = 12,
};
// A device's loss, clipped: the link task's is a sum over its terms (about
// 0.7 each at the start, far more for a pair scored badly).
inline constexpr float kTrainSecureLossClip = 4096.0f;
inline constexpr uint32_t kTrainSecureCountClip = 4095;
// The words of one device's input: the parameters' count plus the extras.
inline constexpr uint32_t TrainSecureLength(uint32_t parameters) { return parameters + kTrainSecureExtras; }

// The dimensions the model sees: the projection's, or the features'.
inline uint32_t ModelFeatures(const TrainParameters& p) { return p.projection != 0 ? p.projection : p.features; }
// Their range, which the one-bit encoding (Eq. 26) is told: [0, 1] for the
// features (binary in the shared datasets), [-1/2, 1/2] for the projection.
struct FeatureRange {
  float lower = 0.0f;
  float upper = 1.0f;
};
inline FeatureRange ModelFeatureRange(const TrainParameters& p) {
  return p.projection != 0 ? FeatureRange{-0.5f, 0.5f} : FeatureRange{0.0f, 1.0f};
}

// The 64-bit mixer behind the job's public rules (the edge split, the
// projection's signs): splitmix64's finaliser. Not a cryptographic hash:
// these rules are public, only their agreement across parties matters.
uint64_t PublicMix64(uint64_t x);

// The public random projection (train_format.h, TrainParameters::
// projection): out[j] = clip(z_j, -kProjectionClip, kProjectionClip) /
// (2 kProjectionClip), z = S x / |x|, S a r x d matrix of signs drawn from
// the seed (PublicMix64), r = out.size(). Each z_j is about N(0, 1) and
// z_u . z_v / r about the cosine of x_u and x_v, so the model sees the
// features' geometry in r dimensions, centred (an uncentred [0, 1] map
// trained 5-17 points worse on Cora: docs/benchmarks.md); the values lie in [-1/2, 1/2]
// (ModelFeatureRange), and the one-bit encoding spends the same budget
// over r dimensions instead of d. A zero vector projects to 0.
// kInvalidArgument for an empty out or x, or out wider than 65,535.
inline constexpr float kProjectionClip = 2.5f;
[[nodiscard]] Status ProjectFeatures(uint64_t seed, Span<const float> x, Span<float> out);

// The edge split of the link task (Lumos Sec. VIII-A: 80/5/15): 0 train,
// 1 validation, 2 test, the same for (a, b) and (b, a). A public rule, not
// a secret: a 64-bit mix of the seed and the ordered pair, not a
// cryptographic hash.
inline constexpr double kEdgeTrainFraction = 0.8;
inline constexpr double kEdgeValidationFraction = 0.05;
uint8_t EdgeSplitOf(uint64_t seed, uint32_t a, uint32_t b);

// Link scores travel as one of kScoreBins bins of the logit h_u . h_v:
// [-16, 16) in steps of 1/8, clamped at both ends (the ROC-AUC is then
// computed over bins, ties counted half).
inline constexpr uint32_t kScoreBins = 256;
uint8_t ScoreBin(float logit);

[[nodiscard]] Result<size_t> EncodeTrainParameters(const TrainParameters& p, ByteSpan out);
// kInvalidArgument for a wrong size or version, an unknown phase, flag or
// layer, a zero dimension, a dropout outside [0, 1), a non-positive or
// non-finite epsilon or label epsilon, epoch 0 in kEpoch, or (secure sum)
// a clip that is not positive and finite or a scale with which one code
// reaches 2^31.
[[nodiscard]] Result<TrainParameters> DecodeTrainParameters(ConstByteSpan bytes);

// JobData kinds.
enum TrainDataKind : uint32_t {
  kTrainAssignment = 1,  // server -> device: split (1): 0 train, 1 validation, 2 test
  kTrainParams = 2,      // server -> device: first index (4) | floats
  kTrainGradient = 3,    // device -> server: first index (4) | floats
  kTrainMetrics = 4,     // device -> server: TrainMetrics
  kTrainSummary = 5,     // device -> server: TrainSummary
  kTrainPartners = 6,    // server -> device (link): entries of id (4) | use (1): 0 training, 1 evaluation
  kTrainLinkScores = 7,  // device -> server (link): epoch (4) | entries of kind (1) | ScoreBin (1)
  // server -> device: epoch (4) | ids (4 each): devices the server gave up
  // on in that epoch (offline past its grace); nobody waits for them.
  kTrainPeersGone = 8,
};

// kTrainPeersGone ids per record.
inline constexpr size_t kTrainGoneIdsPerRecord = 1000;

// kTrainPartners entries per record and kTrainLinkScores entries per record.
inline constexpr size_t kTrainPartnersPerRecord = 500;
inline constexpr size_t kTrainScoresPerRecord = 1500;
enum LinkScoreKind : uint8_t {
  kScoreValidationEdge = 1,  // an edge of the validation split
  kScoreTestEdge = 2,        // an edge of the test split
  kScoreNegative = 3,        // an evaluation partner (a non-edge), for both splits
};

// Floats per kTrainParams / kTrainGradient record (a record's data stays
// within the JobData bound, protocol/limits.h).
inline constexpr size_t kTrainFloatsPerRecord = 1000;

struct TrainMetrics {
  uint32_t epoch = 0;
  uint8_t split = 0;
  bool labelled = false;  // the node has a label (else nothing below counts)
  bool trained = false;   // a loss was taken (training split, train epoch)
  bool correct = false;   // the classifier's prediction equals the label
  uint32_t pool = 0;      // leaves pooled into the node's embedding
  double loss = 0;        // node: the cross-entropy (also for validation and test nodes); link: the loss's sum
  uint32_t terms = 0;     // link: the loss's terms (positives + negatives); node: 1 when trained
};
// epoch (4) | split | flags (bit 0 labelled, 1 trained, 2 correct) | pool (4) | loss (8) | terms (4)
inline constexpr size_t kTrainMetricsBytes = 22;

[[nodiscard]] Result<size_t> EncodeTrainMetrics(const TrainMetrics& m, ByteSpan out);
[[nodiscard]] Result<TrainMetrics> DecodeTrainMetrics(ConstByteSpan bytes);

struct TrainSummary {
  uint32_t workload = 0;
  uint32_t keepers = 0;
  uint32_t epochs = 0;           // epochs whose gradient was uploaded
  uint32_t messages_sent = 0;
  uint32_t messages_received = 0;
  uint32_t rejected = 0;         // relayed messages that failed to open or made no sense
  uint32_t stale = 0;            // messages of another epoch
  uint32_t key_failures = 0;
  double epsilon_all_receivers = 0;  // the feature release, against the union of its receivers
  double epsilon_per_receiver = 0;   // ... and against one receiver (Lumos Theorem 4)
};
inline constexpr size_t kTrainSummaryBytes = 8 * 4 + 2 * 8;

[[nodiscard]] Result<size_t> EncodeTrainSummary(const TrainSummary& s, ByteSpan out);
[[nodiscard]] Result<TrainSummary> DecodeTrainSummary(ConstByteSpan bytes);

// kTrainPeersGone: epoch (>= 1) | 1 .. kTrainGoneIdsPerRecord ids. Encode
// returns the record size (kInvalidArgument for epoch 0 or a count out of
// range, kResourceExhausted for `out` too short); Decode checks a record
// (epoch, count, exact size) and TrainPeersGoneAt reads id i of one that
// passed.
struct TrainPeersGone {
  uint32_t epoch = 0;
  uint32_t count = 0;
};
inline constexpr size_t TrainPeersGoneBytes(size_t count) { return 4 + 4 * count; }
[[nodiscard]] Result<size_t> EncodeTrainPeersGone(uint32_t epoch, Span<const uint32_t> devices, ByteSpan out);
[[nodiscard]] Result<TrainPeersGone> DecodeTrainPeersGone(ConstByteSpan record);
uint32_t TrainPeersGoneAt(ConstByteSpan record, size_t i);

// Device-to-device.
// kPooledEmbedding, kPooledGradient (link task): out floats.
enum class TrainMessageType : uint8_t {
  kKeepNotice = 1,
  kFeatures = 2,
  kLeafEmbedding = 3,
  kLeafGradient = 4,
  kPooledEmbedding = 5,
  kPooledGradient = 6,
};
inline constexpr size_t kTrainMessageHeaderBytes = 5;  // type | epoch (0 in setup)

}  // namespace nodefl::lumos
