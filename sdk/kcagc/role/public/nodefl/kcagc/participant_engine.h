// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ParticipantEngine: what participant P_l computes between the server's
// instructions in a kCAGC job (protocol/kcagc/job_format.h), and nothing
// else: no I/O, no protocol state. The role (participant_role.h) feeds it
// the decoded instructions and sends what it returns through secure sums;
// a test can drive it directly to check the job against the one-process
// runs of server/kcagc/sim, which compute the same steps with the same
// functions in the same order (so the sums, and the clustering, are bit
// for bit the same).
//
//   Prepare        Protocol 1 lines 1-3 (the filter) on the slice and the
//                  move to the cluster space (projection.h), with the
//                  participant's own projection stream
//   RangeBound     B_l for the range round (range.h)
//   LocalClusters  Protocol 1 with k̂ clusters (Protocol 3 line 2)
//   BeginStage     a collaborative k-means over the nodes (basic kCAGC:
//                  Protocol 2 line 5's projection) or over the virtual nodes
//                  of some intersections (Protocol 3 lines 11-15)
//   SeedDistances  joint seeding: distances to one seed point
//   LocalSeeding   Protocol 2 line 6: seeds of its own, and distances to them
//   CentresFromSeeds / UpdateCentres  the centres on the participant's columns
//   Distances      Protocol 2 lines 11 and 26
//   EndStage       the stage's centres (the restart the server kept), which a
//                  tree node's parent may use as virtual nodes (kCentre)
//   TakeSpectralBlock / SpectralProduct  the joint mode (not the paper's:
//                  docs/kcagc.md, "The joint spectral space"): the server's
//                  block Q_t, and Z^l_t = X^l ((X^l)^T Q_t) on the filtered
//                  slice, the simulation's JointSpectralContribution
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/kcagc/local_cluster.h"
#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/secagg/fixed_point.h"

namespace nodefl::kcagc {

// The job's settings a participant computes with.
struct EngineSettings {
  uint32_t clusters = 0;        // k
  uint32_t local_clusters = 0;  // k̂ (basic kCAGC: k)
  FilterOptions filter;
  ClusterSpace space = ClusterSpace::kWhitened;
  uint32_t space_dims = 0;      // of kProjected and kWhitened (0: k)
  VirtualNodeKind virtual_nodes = VirtualNodeKind::kIntersection;
  uint32_t iterations = 10;      // Q
  uint32_t local_restarts = 10;  // Protocol 1's
  uint64_t seed = 1;
  // The joint mode: the slice stays as filtered (the server computes the
  // whitened space of all columns; `space` must be kWhitened), the range
  // bound is G_l, and the only sums are the spectral products.
  bool joint = false;
};

// The widest block Q_t the joint mode's server can send for these settings:
// spectral.h's b for d = space_dims (0: k) directions and any number of
// columns (the participant knows only its own).
uint32_t MaxSpectralBlock(uint32_t nodes, const EngineSettings& settings);

// Where a stage's points come from.
struct EngineStage {
  bool virtual_nodes = false;  // false: the nodes themselves (basic)
  uint32_t tree_node = 0;      // the stage's name (its centres are kept under it)
  uint32_t position = 0;       // this participant's place among the stage's
  // Virtual nodes: the intersections, which key of them is this
  // participant's clustering, and whose clusters those are (own index: its
  // local clusters; else a tree node it took part in).
  std::shared_ptr<const Intersections> groups;
  uint32_t part = 0;
  uint32_t child = 0;
};

class ParticipantEngine {
 public:
  // `graph` must outlive the engine; `raw_slice` is P_l's unfiltered
  // columns (n rows); `index` is l, which names its random streams.
  ParticipantEngine(const GraphView& graph, Matrix raw_slice, uint32_t index);

  // The filter and the cluster space (the joint mode: the filter only).
  // kInvalidArgument for settings that do not fit the data (k or k̂ above
  // n, Q = 0, a bad graph, an empty slice, the joint mode outside
  // kWhitened).
  [[nodiscard]] Status Prepare(const EngineSettings& settings);
  bool prepared() const { return prepared_; }

  uint32_t index() const { return index_; }
  uint32_t nodes() const { return graph_.num_nodes; }
  uint32_t columns() const { return columns_; }

  // B_l (the joint mode: G_l) rounded up onto `range_code`'s grid (range.h;
  // kOutOfRange when the features are too large for it).
  [[nodiscard]] Result<float> RangeBound(const secagg::FixedPoint& range_code) const;
  // Protocol 1 with k̂ clusters: every node's local cluster.
  [[nodiscard]] Result<Assignment> LocalClusters();

  [[nodiscard]] Status BeginStage(const EngineStage& stage);
  uint32_t points() const { return points_ == nullptr ? 0u : static_cast<uint32_t>(points_->rows()); }
  [[nodiscard]] Result<std::vector<float>> SeedDistances(uint32_t seed) const;
  // A new restart whose centres are the points `seeds`.
  [[nodiscard]] Status CentresFromSeeds(Span<const uint32_t> seeds);
  // A new restart seeded alone: k-means++ on the projection from `stream`
  // (and this participant's place), then the distances to its seeds.
  [[nodiscard]] Result<std::vector<float>> LocalSeeding(uint32_t centres, uint64_t stream);
  [[nodiscard]] Status UpdateCentres(const Assignment& assignment);
  // Distances of every point to the current centres, `centres` of them.
  [[nodiscard]] Result<std::vector<float>> Distances(uint32_t centres) const;
  [[nodiscard]] Status EndStage(uint32_t kept_restart);

  // The joint mode's block Q_t for step `step` (0, 1, ... in order): n rows,
  // 1 .. MaxSpectralBlock columns, each of norm at most 1 + 2^-10 (G_l, the
  // range bound, holds for columns of norm 1 up to float rounding, so a
  // longer one could push a product past the code's clip).
  // kFailedPrecondition outside the joint mode or for a step out of order,
  // kInvalidArgument for another shape or a non-finite entry.
  [[nodiscard]] Status TakeSpectralBlock(uint32_t step, Matrix block);
  // Z^l_t for the block of step `step`, which must be the last one taken:
  // n x b values, row-major (node by node).
  [[nodiscard]] Result<std::vector<float>> SpectralProduct(uint32_t step) const;
  uint32_t spectral_steps() const { return spectral_steps_; }  // blocks taken

 private:
  const Matrix* ChildCentres(uint32_t child) const;

  GraphView graph_;
  Matrix slice_;  // after Prepare: the rows P_l clusters
  uint32_t index_;
  uint32_t columns_;
  EngineSettings settings_;
  bool prepared_ = false;
  bool have_local_ = false;
  LocalClustering local_;
  // The current stage.
  EngineStage stage_;
  const Matrix* points_ = nullptr;  // slice_ (basic) or virtual_rows_
  Matrix virtual_rows_;
  Matrix projected_;
  std::vector<double> weights_;
  std::vector<Matrix> restarts_;  // each restart's centres; back() is the current one
  std::map<uint32_t, Matrix> stage_centres_;  // EndStage's, by tree node
  // The joint mode.
  Matrix block_;                 // Q_t of the last step taken
  uint32_t spectral_steps_ = 0;  // blocks taken (the next step's index)
};

}  // namespace nodefl::kcagc
