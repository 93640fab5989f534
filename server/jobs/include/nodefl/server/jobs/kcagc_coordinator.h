// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kCAGC coordinator: the server's (P_L's) side of a whole run, against
// an interface to the L participants (KcagcParticipants). The kcagc job
// runs it on a worker thread with participants reached over the network
// (kcagc_remote_participants.h); a test runs it with participants in the
// same process. Its steps are those of the one-process runs
// (server/kcagc/sim runs.h and collaborative.h) with every participant's
// computation behind the interface: the range round; basic kCAGC's
// collaborative k-means over the nodes (kCAGC Protocol 2); kCAGC's local
// clusterings, intersections and k-means over the weighted virtual nodes
// (Protocol 3); the tree arrangement (Sec. 3.4); the joint mode (not the
// paper's: the subspace iteration of nodefl/kcagc/spectral.h, one secure
// sum per step, then kCAGC Protocol 1 on U at the server, as server/kcagc/sim
// joint.h and runs.h do). The server-side rules are
// server/kcagc's own (AssignFromSums, Intersect, SpreadToNodes, BuildTree)
// and sdk/kcagc's SeedSampler, and the random streams are numbered alike,
// so with the same settings the coordinator and the simulation see the
// same sums and produce the same clustering, bit for bit.
//
// What crosses from a participant to the server: sums (through the
// interface's Sum* calls, each one secure aggregation) and, in kCAGC and
// the tree, the local clusterings (Protocol 3 line 2). What goes back:
// seed indices, assignments, intersections, the joint mode's blocks Q_t
// and the final clustering.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/kcagc/aggregator.h"

namespace nodefl::server::jobs {

enum class KcagcRunMode : uint8_t { kBasic, kKcagc, kTree, kJoint };
enum class KcagcSeedingRule : uint8_t { kJoint, kLocal };  // server/kcagc/sim collaborative.h

// The settings the server needs (the participants' own are in the job's
// parameters).
struct KcagcRunSettings {
  KcagcRunMode mode = KcagcRunMode::kKcagc;
  uint32_t clusters = 0;        // k
  uint32_t local_clusters = 0;  // k̂ (kcagc, tree)
  KcagcSeedingRule seeding = KcagcSeedingRule::kJoint;
  uint32_t iterations = 10;     // Q
  uint32_t global_restarts = 1;
  uint64_t seed = 1;
  // kJoint: the whitened space's dimensions (0: k) and kCAGC Protocol 1's
  // restarts, which the server runs on U itself.
  uint32_t space_dims = 0;
  uint32_t local_restarts = 10;
  std::function<void(const std::string&)> progress;  // optional, one line per step
};

// A collaborative k-means stage: which participants (a contiguous range of
// indices) and over which points.
struct KcagcStageSetup {
  uint32_t tree_node = 0;  // kTree: the internal node; else 0
  uint32_t first = 0;      // participants first .. first + count - 1
  uint32_t count = 0;
  // Null: the nodes themselves (basic kCAGC). Else one virtual node per
  // intersection; member i's clustering is key parts[i] of the groups, the
  // clusters of tree node children[i] (its own index: its local clusters).
  std::shared_ptr<const nodefl::kcagc::Intersections> groups;
  std::vector<uint32_t> parts;
  std::vector<uint32_t> children;

  uint32_t points(uint32_t nodes) const { return groups == nullptr ? nodes : groups->size(); }
};

// The participants as the coordinator sees them. The Sum* calls are one
// secure aggregation each, over the current stage's members (the range
// round: everyone), and return the decoded sum; the others are
// instructions.
class KcagcParticipants {
 public:
  virtual ~KcagcParticipants() = default;

  virtual uint32_t count() const = 0;
  virtual uint32_t nodes() const = 0;
  // m: the columns of all slices together (each slice's width is public).
  virtual uint64_t columns() const = 0;

  // Each participant's B_l under `range_code`: 1 value.
  [[nodiscard]] virtual Result<std::vector<float>> SumRangeBounds(const nodefl::secagg::FixedPoint& range_code) = 0;
  // Protocol 1 on every participant (k̂ clusters): each one's local cluster
  // of every node, in participant order.
  [[nodiscard]] virtual Result<std::vector<nodefl::kcagc::Assignment>> LocalClusters(uint32_t local_clusters) = 0;
  [[nodiscard]] virtual Status BeginStage(const KcagcStageSetup& stage) = 0;
  // Joint seeding: distances of the stage's points to point `seed`: N values.
  [[nodiscard]] virtual Result<std::vector<float>> SumSeedDistances(uint32_t seed, const nodefl::secagg::FixedPoint& code) = 0;
  // Joint seeding chose `seeds`: they are the centres (a new restart).
  [[nodiscard]] virtual Status SeedCentres(std::span<const uint32_t> seeds) = 0;
  // Local seeding (Protocol 2 line 6; a new restart): N x centres values.
  [[nodiscard]] virtual Result<std::vector<float>> SumLocalSeedDistances(uint32_t centres, uint64_t stream,
                                                                         const nodefl::secagg::FixedPoint& code) = 0;
  [[nodiscard]] virtual Status UpdateCentres(const nodefl::kcagc::Assignment& assignment) = 0;
  // Distances of the stage's points to the current centres: N x centres values.
  [[nodiscard]] virtual Result<std::vector<float>> SumDistances(uint32_t centres, const nodefl::secagg::FixedPoint& code) = 0;
  [[nodiscard]] virtual Status EndStage(uint32_t kept_restart) = 0;
  // The joint mode's step `step` (0, 1, ...): the block Q_t (n x b) to
  // every participant, and the sum of their X^l ((X^l)^T Q_t): n x b
  // values, row-major.
  [[nodiscard]] virtual Result<std::vector<float>> SumSpectralStep(uint32_t step, const nodefl::kcagc::Matrix& block,
                                                                   const nodefl::secagg::FixedPoint& code) = 0;
  // The final clustering of the nodes, for every participant.
  [[nodiscard]] virtual Status Finish(const nodefl::kcagc::Assignment& clustering) = 0;
};

struct KcagcStageSummary {
  uint32_t tree_node = 0;
  uint32_t depth = 0;
  uint32_t participants = 0;
  uint64_t points = 0;
  uint32_t centres = 0;
  uint32_t iterations = 0;  // Lloyd's, in the run kept
  uint32_t lloyd_iterations_total = 0;
  bool converged = false;
  uint32_t unassigned_after_one_ninth = 0;
  uint64_t rounds = 0;
  uint64_t secure_sums = 0;
};

struct KcagcRunSummary {
  nodefl::kcagc::Assignment assignment;  // every node's cluster
  uint32_t participants = 0;
  uint32_t internal_nodes = 0;           // kTree
  uint64_t intersections = 0;            // kKcagc: virtual nodes; kTree: summed over internal nodes
  uint64_t max_intersections = 0;
  std::vector<KcagcStageSummary> stages;
  // In the simulation's units (server/kcagc aggregator.h): rounds, summed
  // scalars (the paper's secure sums), and what the participants' values
  // weigh (4 bytes each, before masking and framing).
  server::kcagc::AggregationCounters cost;
  uint64_t expected_secure_sums = 0;  // 1 + the stages' StageSecureSums (kJoint: 1 + steps n b)
  double paper_secure_sums = 0;       // kJoint: 0, the paper has no such mode
  float clip = 0.0f;
  nodefl::secagg::FixedPoint code;
  // kJoint: the subspace iteration's products (each one aggregation of n b
  // scalars), b, whether it converged before its cap, σ_1 .. σ_k (the
  // server learns them with U), and Protocol 1's figures on U.
  uint32_t spectral_steps = 0;
  uint32_t spectral_block = 0;
  bool spectral_converged = false;
  std::vector<double> singular_values;
  uint32_t local_iterations = 0;
  uint32_t local_unassigned_after_one_ninth = 0;
};

// kInvalidArgument for settings that do not fit (k = 0, k or k̂ above n,
// fewer than 2 participants, Q = 0, no restarts, kJoint without columns);
// any error a call returns
// ends the run with that error.
[[nodiscard]] Result<KcagcRunSummary> RunKcagcCoordinator(const KcagcRunSettings& settings,
                                                          KcagcParticipants& participants);

const char* KcagcRunModeName(KcagcRunMode mode);

}  // namespace nodefl::server::jobs
