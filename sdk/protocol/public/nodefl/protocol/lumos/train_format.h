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
// Device-to-device plaintexts (sealed with the pair's job keys, relayed):
// type (1) | epoch (4) | body. kKeepNotice: keeps (1). kFeatures: the
// packed encoding (OneBitPackedSize(d) bytes, privacy/one_bit_encoder.h).
// kLeafEmbedding, kLeafGradient: out floats.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::lumos {

inline constexpr uint8_t kTrainVersion = 1;

enum class TrainPhase : uint8_t { kSetup = 1, kEpoch = 2, kReport = 3 };

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
};
// version | phase | flags (bit 0 paper, bit 1 ego star, bit 2 train) |
// layer | features (4) | hidden (2) | out (2) | heads | classes (2) |
// dropout (4) | epsilon (4) | parameters (4) | salt (16) | epoch (4) |
// label epsilon (4)
inline constexpr size_t kTrainParametersBytes = 51;

[[nodiscard]] Result<size_t> EncodeTrainParameters(const TrainParameters& p, ByteSpan out);
// kInvalidArgument for a wrong size or version, an unknown phase, flag or
// layer, a zero dimension, a dropout outside [0, 1), a non-positive or
// non-finite epsilon or label epsilon, or epoch 0 in kEpoch.
[[nodiscard]] Result<TrainParameters> DecodeTrainParameters(ConstByteSpan bytes);

// JobData kinds.
enum TrainDataKind : uint32_t {
  kTrainAssignment = 1,  // server -> device: split (1): 0 train, 1 validation, 2 test
  kTrainParams = 2,      // server -> device: first index (4) | floats
  kTrainGradient = 3,    // device -> server: first index (4) | floats
  kTrainMetrics = 4,     // device -> server: TrainMetrics
  kTrainSummary = 5,     // device -> server: TrainSummary
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
  double loss = 0;        // the cross-entropy (also for validation and test nodes)
};
// epoch (4) | split | flags (bit 0 labelled, 1 trained, 2 correct) | pool (4) | loss (8)
inline constexpr size_t kTrainMetricsBytes = 18;

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

// Device-to-device.
enum class TrainMessageType : uint8_t { kKeepNotice = 1, kFeatures = 2, kLeafEmbedding = 3, kLeafGradient = 4 };
inline constexpr size_t kTrainMessageHeaderBytes = 5;  // type | epoch (0 in setup)

}  // namespace nodefl::lumos
