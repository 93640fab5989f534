// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_KCAGC: kCAGC ("Attributed Graph Clustering in
// Collaborative Settings") between L participants (organisations, each
// holding the whole graph and some feature columns; device side: sdk/kcagc
// role, participant_role.h) and the server, which plays the paper's P_L
// (server/jobs kcagc_job.h). All integers little endian, floats IEEE-754
// binary32.
//
// Round 1. JobStart.parameters = KcagcParameters (the job's settings, the
// same for everyone). Each participant draws and announces a job key
// (seal/job_keys.h): the secure sums seal their peer messages with it. The
// server then sends each participant kKcagcWelcome (its index l among the
// L participants, in ascending device id), and the participant filters its
// slice, moves it to the cluster space and answers kKcagcReady.
// Then the server drives the run with instructions, one after another, in
// the order of kCAGC Protocols 2 and 3:
//   kKcagcContribute  contribute a vector to the secure aggregation named
//                     in it (the range bound B_l, distances to seed point s,
//                     local seeding's distances, distances to the current
//                     centres), in the fixed-point code it gives. The
//                     aggregation's own records (aggregation_format.h, kinds
//                     kAggKindFirst..kAggKindLast) follow on the same stream;
//                     the vector leaves the participant only masked.
//   kKcagcLocalCluster  run Protocol 1 locally (k̂ clusters) and upload the
//                     local cluster of every node (kKcagcLocalClusters runs).
//   kKcagcStage       a collaborative k-means over the nodes (basic kCAGC)
//                     or over virtual nodes (kCAGC, a tree node): the
//                     intersections come first as arrays (kGroupNodes,
//                     kGroupOffsets, kGroupKeys: nodefl/kcagc/types.h's
//                     Intersections), then this record with the
//                     participant's part and child.
//   kKcagcSeedCentres the joint seeding chose these points (array kSeeds):
//                     they are the centres.
//   kKcagcUpdateCentres  here is the assignment of the stage's points
//                     (array kAssignment, -1 unassigned): update your
//                     centres (Protocol 2 lines 19 and 34; the stage's
//                     weights are the intersections' sizes).
//   kKcagcEndStage    the stage kept restart r (its centres are the stage's).
//   kKcagcDone        the final clustering of the nodes (array kAssignment).
//   kKcagcAbort       the run failed (a StatusCode); forget it.
//   kKcagcSpectralStep  the joint mode's step t (below): the block Q_t came
//                     first as array kBlock.
// A participant answers with uploads only: kKcagcReady, kKcagcLocalClusters
// (Protocol 3 line 2: node ids per local cluster, as one id per node), and
// kKcagcRefuse when it cannot follow an instruction. Every sum of Protocols
// 2 and 3 goes through the aggregation sub-protocol and nothing else: the
// server learns the sums, the local clusterings and nothing of a slice.
// The joint mode (kJoint; not the paper's protocol: docs/kcagc.md, "The
// joint spectral space") runs other instructions after kKcagcReady. The
// participant keeps its filtered slice X^l as it is (no cluster space: the
// server computes the whitened space of all the columns), and its range
// bound is G_l instead of B_l (nodefl/kcagc/range.h). Then, for t = 0, 1,
// ... until the server's subspace iteration (nodefl/kcagc/spectral.h)
// stops:
//   array kBlock      Q_t, n x b floats (their bit patterns), row-major
//   kKcagcSpectralStep  t, n, b: the block is Q_t
//   kKcagcContribute  kSpectralProduct, argument t: Z^l_t = X^l ((X^l)^T Q_t)
//                     through one aggregation of n b values
// and finally kKcagcDone (the server clustered U itself). Q_0 is sent like
// every other block although every party could draw it from the public
// seed: the server's Rayleigh-Ritz step assumes the product came from
// exactly the floats it holds, and a participant's own draw (a Householder
// QR in double) matches them only when built with the same Eigen and the
// same floating-point contraction; the saving would be one block of the
// run's 12-15 (Cora: 184 KB of 2.76 MB down per participant).
// Versions: the parameters' mode is the switch. A participant that
// predates kJoint refuses kJoint's parameters (an unknown mode) before any
// sum, and the joint mode's records follow only those parameters, so the
// format carries no version field.
// Round 2. The participant reports (JobReport code: OK when it received the
// final clustering) and is done.
//
// Arrays (kKcagcArray, server -> participant; kKcagcLocalClusters,
// participant -> server): array (4) | total (4) | offset (4) | values (4
// each, at most kKcagcValuesPerRecord), runs in order from offset 0; a run
// at offset 0 starts the array anew.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/secagg/aggregation_format.h"

namespace nodefl::kcagc {

inline constexpr size_t kKcagcSaltBytes = 16;
inline constexpr size_t kKcagcRecordBytes = 4096;  // JobData.data
inline constexpr size_t kKcagcArrayHeaderBytes = 12;
inline constexpr uint32_t kKcagcValuesPerRecord = (kKcagcRecordBytes - kKcagcArrayHeaderBytes) / 4;
// Participants: the full mask graph among them must fit one aggregation.
inline constexpr uint32_t kKcagcMaxParticipants = 1024;
inline constexpr uint32_t kKcagcMaxClusters = 65535;

enum KcagcDataKind : uint32_t {
  // server -> participant
  kKcagcWelcome = 0x4B01,        // KcagcWelcome
  kKcagcArray = 0x4B02,          // KcagcArrayRun
  kKcagcContribute = 0x4B10,     // KcagcContribute
  kKcagcLocalCluster = 0x4B11,   // clusters (4)
  kKcagcStage = 0x4B12,          // KcagcStage
  kKcagcSeedCentres = 0x4B13,    // count (4); array kSeeds
  kKcagcUpdateCentres = 0x4B14,  // points (4); array kAssignment
  kKcagcEndStage = 0x4B15,       // kept restart (4)
  kKcagcDone = 0x4B16,           // nodes (4); array kAssignment
  kKcagcAbort = 0x4B17,          // StatusCode (1)
  kKcagcSpectralStep = 0x4B18,   // KcagcSpectralStep; array kBlock
  // participant -> server
  kKcagcReady = 0x4B40,          // KcagcReady
  kKcagcLocalClusters = 0x4B41,  // KcagcArrayRun (array kLocalClusters)
  kKcagcRefuse = 0x4B42,         // KcagcRefuse
};

// kJoint: the joint spectral space (above), kWhitened only.
enum class KcagcMode : uint8_t { kBasic = 1, kKcagc = 2, kTree = 3, kJoint = 4 };
enum class KcagcFilter : uint8_t { kHalf = 0, kNorm = 1 };           // graph_filter.h
enum class KcagcSpace : uint8_t { kFull = 0, kProjected = 1, kWhitened = 2 };  // projection.h
enum class KcagcSeeding : uint8_t { kJoint = 0, kLocal = 1 };
enum class KcagcVirtual : uint8_t { kIntersection = 0, kCentre = 1 };  // participant.h

struct KcagcParameters {
  uint8_t salt[kKcagcSaltBytes] = {};  // the job keys' salt (public)
  KcagcMode mode = KcagcMode::kKcagc;
  uint32_t clusters = 0;        // k
  uint32_t local_clusters = 0;  // k̂ (kcagc, tree; basic: k)
  KcagcFilter filter = KcagcFilter::kHalf;
  uint32_t filter_order = 0;    // ψ (the server always sets it)
  bool self_loops = true;
  KcagcSpace space = KcagcSpace::kWhitened;
  uint32_t space_dims = 0;      // dimensions of the projected or whitened space (0: k)
  KcagcSeeding seeding = KcagcSeeding::kJoint;
  KcagcVirtual virtual_nodes = KcagcVirtual::kIntersection;
  uint32_t iterations = 10;      // Q
  uint32_t local_restarts = 10;  // Protocol 1's (local, free)
  uint64_t seed = 1;             // seeding and projection streams (nodefl/kcagc/rng.h)
  uint32_t participants = 0;     // L
  secagg::AggMode aggregation = secagg::AggMode::kRobust;
};
inline constexpr size_t kKcagcParametersBytes = kKcagcSaltBytes + 1 + 4 + 4 + 1 + 4 + 1 + 1 + 4 + 1 + 1 + 4 + 4 + 8 + 4 + 1;
void EncodeKcagcParameters(const KcagcParameters& p, uint8_t (&out)[kKcagcParametersBytes]);
// kInvalidArgument for a wrong size or a field outside its range (k = 0,
// k̂ = 0, Q = 0, no restarts, L < 2, an unknown enum value, kJoint in a
// space other than kWhitened).
Result<KcagcParameters> DecodeKcagcParameters(ConstByteSpan bytes);

// kKcagcWelcome: the participant's place in the job.
struct KcagcWelcome {
  uint32_t index = 0;         // l, 0 .. participants - 1
  uint32_t participants = 0;  // L
};
inline constexpr size_t kKcagcWelcomeBytes = 8;
void EncodeKcagcWelcome(const KcagcWelcome& w, uint8_t (&out)[kKcagcWelcomeBytes]);
Result<KcagcWelcome> DecodeKcagcWelcome(ConstByteSpan bytes);

// kKcagcReady: the participant's graph and slice.
struct KcagcReady {
  uint32_t nodes = 0;    // n (every participant holds the same graph)
  uint32_t columns = 0;  // m_l, its feature columns (public: the slice's width)
};
inline constexpr size_t kKcagcReadyBytes = 8;
void EncodeKcagcReady(const KcagcReady& r, uint8_t (&out)[kKcagcReadyBytes]);
Result<KcagcReady> DecodeKcagcReady(ConstByteSpan bytes);

enum class KcagcArray : uint32_t {
  kAssignment = 1,     // one cluster per point (int32; -1 unassigned)
  kSeeds = 2,          // point indices
  kGroupNodes = 3,     // Intersections::nodes
  kGroupOffsets = 4,   // Intersections::offsets
  kGroupKeys = 5,      // Intersections::keys (int32)
  kLocalClusters = 6,  // participant -> server: one local cluster per node
  kBlock = 7,          // the joint mode's Q_t: float bit patterns, row-major (n x b)
};

struct KcagcArrayRun {
  KcagcArray array = KcagcArray::kAssignment;
  uint32_t total = 0;   // the whole array's length
  uint32_t offset = 0;  // of this run's first value
  ConstByteSpan values;  // 4 bytes each
  uint32_t count() const { return static_cast<uint32_t>(values.size() / 4); }
  uint32_t at(uint32_t i) const { return LoadU32Le(values.data() + 4 * i); }
};
// The bytes written (12 + 4 * values.size()); kOutOfRange when `out` is
// short or more than kKcagcValuesPerRecord values are given.
Result<size_t> EncodeKcagcArrayRun(KcagcArray array, uint32_t total, uint32_t offset, Span<const uint32_t> values,
                                   ByteSpan out);
// kInvalidArgument for a size that is not 12 + 4k (k >= 1, k <= the
// record's room), an unknown array, or a run past `total`.
Result<KcagcArrayRun> DecodeKcagcArrayRun(ConstByteSpan bytes);

// kKcagcContribute: what to add to aggregation `aggregation`.
enum class KcagcContribution : uint8_t {
  kRangeBound = 1,     // B_l rounded up (nodefl/kcagc/range.h): 1 value
  kSeedDistances = 2,  // joint seeding: distances of the stage's projected points to point `argument`: N values
  kLocalSeeding = 3,   // Protocol 2 line 6: seed `argument` centres alone (k-means++ from `stream`),
                       // distances of the projected points to them: N x argument values
  kDistances = 4,      // distances of the stage's points to the current centres: N x argument values
  kSpectralProduct = 5,  // the joint mode: X^l ((X^l)^T Q_t) for step t = `argument`: n x b values, row-major
};
struct KcagcContribute {
  KcagcContribution what = KcagcContribution::kDistances;
  uint32_t aggregation = 0;  // the aggregation's id (aggregation_format.h)
  float clip = 0.0f;         // the fixed-point code (secagg/fixed_point.h)
  float scale = 0.0f;
  uint32_t argument = 0;     // the seed point, or the number of centres
  uint64_t stream = 0;       // kLocalSeeding: the restart's random stream
};
inline constexpr size_t kKcagcContributeBytes = 1 + 4 + 4 + 4 + 4 + 8;
void EncodeKcagcContribute(const KcagcContribute& c, uint8_t (&out)[kKcagcContributeBytes]);
// kInvalidArgument for a wrong size, an unknown contribution, aggregation 0
// or a code that is not positive and finite.
Result<KcagcContribute> DecodeKcagcContribute(ConstByteSpan bytes);

// kKcagcStage: the next collaborative k-means, over the points the
// participant builds from it.
enum class KcagcPoints : uint8_t {
  kNodes = 1,    // basic kCAGC: every node (no arrays)
  kVirtual = 2,  // one virtual node per intersection (the group arrays came first)
};
struct KcagcStage {
  KcagcPoints points = KcagcPoints::kNodes;
  uint32_t tree_node = 0;  // the stage's name: kTree's internal node, else 0
  uint32_t position = 0;   // this participant's place among the stage's (local seeding's stream)
  uint32_t members = 0;    // the participants in the stage
  uint32_t groups = 0;     // kVirtual: intersections
  uint32_t parts = 0;      // kVirtual: clusterings intersected
  uint32_t part = 0;       // kVirtual: which of them is this participant's
  uint32_t child = 0;      // kVirtual: the tree node whose clusters part is (its own index: its local clusters)
};
inline constexpr size_t kKcagcStageBytes = 1 + 7 * 4;
void EncodeKcagcStage(const KcagcStage& s, uint8_t (&out)[kKcagcStageBytes]);
// kInvalidArgument for a wrong size, unknown points, position >= members,
// or (kVirtual) no groups, part >= parts.
Result<KcagcStage> DecodeKcagcStage(ConstByteSpan bytes);

// kKcagcSpectralStep: the block of step `step` (0, 1, ... in order) is the
// array kBlock sent before it, `rows` x `columns`.
struct KcagcSpectralStep {
  uint32_t step = 0;
  uint32_t rows = 0;     // n
  uint32_t columns = 0;  // b
};
inline constexpr size_t kKcagcSpectralStepBytes = 12;
void EncodeKcagcSpectralStep(const KcagcSpectralStep& s, uint8_t (&out)[kKcagcSpectralStepBytes]);
// kInvalidArgument for a wrong size, no rows, columns outside 1..rows (a
// block of more columns than rows cannot be orthonormal), or a block longer
// than one aggregation (secagg::kMaxAggLength values).
Result<KcagcSpectralStep> DecodeKcagcSpectralStep(ConstByteSpan bytes);

// The records of one 32-bit field (kKcagcLocalCluster, kKcagcSeedCentres,
// kKcagcUpdateCentres, kKcagcEndStage, kKcagcDone).
inline constexpr size_t kKcagcWordBytes = 4;
void EncodeKcagcWord(uint32_t value, uint8_t (&out)[kKcagcWordBytes]);
Result<uint32_t> DecodeKcagcWord(ConstByteSpan bytes);

// kKcagcRefuse: the participant cannot follow instruction `kind`.
struct KcagcRefuse {
  StatusCode code = StatusCode::kUnknown;
  uint32_t kind = 0;  // the instruction's record kind (0: none, e.g. the job's parameters)
};
inline constexpr size_t kKcagcRefuseBytes = 5;
void EncodeKcagcRefuse(const KcagcRefuse& r, uint8_t (&out)[kKcagcRefuseBytes]);
Result<KcagcRefuse> DecodeKcagcRefuse(ConstByteSpan bytes);

}  // namespace nodefl::kcagc
