// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Whole kCAGC runs in one process, participants and server together, every
// secure sum through a pluggable Aggregator:
//
//   kCentral  the baseline: kCAGC Protocol 1 on the whole filtered feature
//             matrix (AGC-style filtered k-means; no participants, no sums)
//   kBasic    basic kCAGC, Protocol 2: every node is a point of the joint
//             k-means; each participant projects its slice onto its top k
//             right singular vectors for seeding and the 1/9 step
//   kKcagc    kCAGC, Protocol 3: Protocol 1 on every slice (k̂ local
//             clusters), the intersections, one weighted virtual node per
//             intersection, Protocol 2 on the virtual nodes, every node
//             takes its intersection's cluster
//   kTree     the tree arrangement of Sec. 3.4 (tree.h): Protocol 3 at
//             every internal node over its two children's clusters
//   kJoint    not the paper's protocol (docs/kcagc.md, "The joint spectral
//             space"): the whitened space of the concatenated filtered
//             slices, U, by subspace iteration through secure sums
//             (joint.h); the server then runs the central run's
//             clustering step (Protocol 1 on U) in the clear
//
// Before any collaborative stage: every participant filters its slice
// (Protocol 1 lines 1-3), moves it to the cluster space (projection.h;
// kCentral's whitened space of the whole matrix: spectral.h, the iteration
// kJoint runs jointly), and the range round fixes the fixed-point code
// (nodefl/kcagc/range.h). Random streams: participant l's local seeding,
// the server's joint seeding and the projection each take their own stream
// of `seed`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/sim/collaborative.h"

namespace nodefl::server::kcagc {

enum class Mode : uint8_t { kCentral, kBasic, kKcagc, kTree, kJoint };

struct RunOptions {
  Mode mode = Mode::kKcagc;
  uint32_t clusters = 0;        // k
  uint32_t local_clusters = 0;  // k̂ (0: k); kKcagc and kTree
  nodefl::kcagc::FilterOptions filter;
  // Every participant's rows after the filter (projection.h), on
  // space_dims dimensions (0: k) for kProjected and kWhitened. kFull is
  // Protocol 1 as written; the defaults are chosen by measurement
  // (docs/kcagc.md).
  // kJoint: kWhitened only (the server never sees the features, so there
  // is no joint full space).
  nodefl::kcagc::ClusterSpace space = nodefl::kcagc::ClusterSpace::kWhitened;
  uint32_t space_dims = 0;
  // The projections' method (projection.h): kAuto takes the exact one while
  // a side is at most 512. kJoint always iterates.
  nodefl::kcagc::ProjectionMethod projection_method = nodefl::kcagc::ProjectionMethod::kAuto;
  Seeding seeding = Seeding::kJoint;
  nodefl::kcagc::VirtualNodeKind virtual_nodes = nodefl::kcagc::VirtualNodeKind::kIntersection;
  uint32_t iterations = 10;  // Q, for every k-means of the run
  // Protocol 1's restarts on every participant (local_cluster.h: local
  // computation, free) and the collaborative stages' (collaborative.h: each
  // costs its secure sums; 1 is the paper's count).
  uint32_t local_restarts = 10;
  uint32_t global_restarts = 1;
  uint64_t seed = 1;
  std::function<void(const std::string&)> progress;  // optional, one line per step
};

// One collaborative k-means stage (kTree: one internal node).
struct StageReport {
  uint32_t tree_node = 0;  // kTree: the node's index in the tree, else 0
  uint32_t depth = 0;      // kTree: the node's depth (root 0)
  uint32_t participants = 0;
  uint64_t points = 0;     // N: nodes (basic) or intersections
  uint32_t centres = 0;
  uint32_t iterations = 0;  // Lloyd's, in the run kept
  uint32_t restarts = 1;
  uint32_t lloyd_iterations_total = 0;  // over every restart
  bool converged = false;
  uint32_t unassigned_after_one_ninth = 0;
  AggregationCounters cost;
  uint64_t expected_secure_sums = 0;  // StageSecureSums(points, centres, lloyd_iterations_total, restarts)
};

struct RunReport {
  nodefl::kcagc::Assignment assignment;  // every node's cluster
  uint32_t participants = 0;
  uint32_t internal_nodes = 0;           // kTree
  uint64_t intersections = 0;            // kKcagc: virtual nodes; kTree: summed over internal nodes
  uint64_t max_intersections = 0;
  std::vector<StageReport> stages;
  AggregationCounters cost;              // the whole run, range round included
  uint64_t expected_secure_sums = 0;     // 1 + Σ stages (kJoint: 1 + steps n b; 0 for kCentral)
  double paper_secure_sums = 0;          // the paper's figure for this mode (secure_sums.h; 0: none)
  std::vector<double> bounds;            // B_l (kJoint: G_l)
  float clip = 0.0f;                     // the working code
  nodefl::secagg::FixedPoint code;
  // kJoint, and kCentral's whitened space when it iterates (spectral.h):
  // products X X^T Q_t taken (kJoint: each one aggregation of n b scalars),
  // the block's width b, whether the iteration converged before its cap,
  // and (kJoint) the top singular values the server learns.
  uint32_t spectral_steps = 0;
  uint32_t spectral_block = 0;
  bool spectral_converged = false;
  std::vector<double> singular_values;
  // kJoint, and kCentral in the whitened space: U, the n x k rows the
  // clustering step ran on (what the joint mode's server learns).
  nodefl::kcagc::Matrix embedding;
  uint32_t local_iterations_max = 0;     // Protocol 1's Lloyd iterations (central, or the slowest participant)
  uint32_t local_unassigned_max = 0;     // Protocol 1's 1/9 step, the most left unassigned
  double filter_seconds = 0.0;
  double seconds = 0.0;
};

// raw_slices: the participants' unfiltered slices (n rows each) in
// participant order; kCentral joins them into one matrix. Moved in: each is
// filtered in place. kInvalidArgument for a bad graph or options (k = 0,
// k > n, L = 0, kTree with L < 2, kJoint outside the whitened space, an
// empty slice, Q = 0, no restarts),
// kOutOfRange from the range rule (features too large for its code).
[[nodiscard]] Result<RunReport> RunSimulation(const nodefl::kcagc::GraphView& graph,
                                              std::vector<nodefl::kcagc::Matrix> raw_slices,
                                              const RunOptions& options, Aggregator* aggregator);

const char* ModeName(Mode mode);

}  // namespace nodefl::server::kcagc
