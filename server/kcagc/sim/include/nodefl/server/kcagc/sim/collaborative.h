// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Collaborative k-means across participants in one process: kCAGC Protocol
// 2 from line 6 on (the seeding, the 1/9 step, at most Q Lloyd iterations),
// on any points the participants hold row by row (basic kCAGC: the nodes;
// kCAGC: the weighted virtual nodes of Protocol 3 line 16). Every value that
// crosses from the participants to the server goes through the Aggregator
// as a sum; every value that comes back is an assignment or a seed index.
// The participants' side is sdk/kcagc (participant.h), the server's is
// assignment.h and kmeans.h's SeedSampler.
//
// Seeding of the global centres, two ways:
//   kJoint  (default) joint k-means++ over the point indices: the server
//           draws the first seed ∝ weight, then for each seed the
//           participants submit their distances to it (on their projected
//           columns) to one secure sum of N scalars, and the server draws
//           the next seed from the summed distances; c rounds of N. The
//           distances to the c seeds are the 1/9 step's, so it costs no
//           more than the paper's way, and centre r is one point (the same
//           for every participant).
//   kLocal  Protocol 2 line 6 as written: each participant seeds c centres
//           on its own projected data independently; one secure sum of the
//           N c distances for the 1/9 step. Centre r of two participants
//           then belong to different points: the summed "distance to
//           centre r" mixes unrelated seeds (a defect of the protocol as
//           written, docs/kcagc.md).
//
// Restarts (default 1, the paper's count): the server may run the whole
// stage from several independent seedings and keep the run of least
// inertia Σ_i w_i D_{i,a(i)}, which it reads off the last round's sums
// (exact when the run converged, an upper bound otherwise); each restart
// costs its own secure sums.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/kcagc/aggregator.h"

namespace nodefl::server::kcagc {

enum class Seeding : uint8_t { kJoint, kLocal };

struct StageOptions {
  uint32_t centres = 0;      // c
  uint32_t iterations = 10;  // Q >= 1
  Seeding seeding = Seeding::kJoint;
  uint64_t seed = 1;
  uint64_t stage = 0;        // tells the random streams of a run's stages apart
  uint32_t restarts = 1;     // >= 1
};

struct LloydOutcome {
  nodefl::kcagc::Assignment assignment;
  uint32_t iterations = 0;
  bool converged = false;
  double inertia = 0.0;  // Σ_i w_i D_{i,a(i)} from the last round's sums
};

struct StageResult {
  nodefl::kcagc::Assignment assignment;        // every point
  std::vector<nodefl::kcagc::Matrix> centres;  // per participant, c x m_l
  std::vector<uint32_t> seeds;                 // joint: the seed points
  uint32_t unassigned_after_one_ninth = 0;
  uint32_t iterations = 0;  // Lloyd's, in the run kept
  bool converged = false;
  double inertia = 0.0;
  uint32_t restart = 0;                 // the run kept
  uint32_t lloyd_iterations_total = 0;  // over every restart
};

// Protocol 2 lines 22-37 from given centres (each participant's slice of
// them), *centres updated in place. points: per participant, N rows each;
// weights: N or empty; previous: the assignment the centres came from, or
// null. kInvalidArgument on shapes or max_iterations = 0.
[[nodiscard]] Result<LloydOutcome> CollaborativeLloyd(std::span<const nodefl::kcagc::Matrix> points,
                                                      std::span<const double> weights,
                                                      std::span<nodefl::kcagc::Matrix> centres,
                                                      const nodefl::kcagc::Assignment* previous,
                                                      uint32_t max_iterations, const nodefl::secagg::FixedPoint& code,
                                                      Aggregator* aggregator);

// Seeding + 1/9 step + Lloyd. projected: per participant, the points on its
// projection (N rows each).
[[nodiscard]] Result<StageResult> CollaborativeKMeans(std::span<const nodefl::kcagc::Matrix> points,
                                                      std::span<const nodefl::kcagc::Matrix> projected,
                                                      std::span<const double> weights, const StageOptions& options,
                                                      const nodefl::secagg::FixedPoint& code, Aggregator* aggregator);

}  // namespace nodefl::server::kcagc
