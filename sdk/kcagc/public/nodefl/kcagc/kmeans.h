// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The k-means pieces of kCAGC Protocol 1, each usable on one participant's
// own data and, through the same rule, at the server over securely summed
// distances:
//   - squared distances of points to centres (lines 7 and 17);
//   - the seeding: k-means++ (Arthur and Vassilvitskii 2007), an O(log k)
//     approximation in expectation, as the "standard 10-approximation" of
//     line 4 (any constant-factor seeding serves Awasthi and Sheffet's
//     argument; k-means++ is the one every library ships), weighted for
//     virtual nodes (kCAGC Sec. 3.4: cluster sizes are the weights);
//   - the 1/9 step (line 9): a point joins S_r only if d_r <= d_s / 9 for
//     every s != r, otherwise it stays unassigned;
//   - the nearest-centre step of Lloyd (line 19), ties to the lowest index;
//   - the centre update (lines 12 and 22): weighted means of the assigned
//     points; a cluster that received no weight keeps its previous centre
//     (after the 1/9 step: its seed point), so no participant needs anything
//     beyond the assignment to update its slice;
//   - Lloyd's iterations (lines 14-24), at most Q, stopping early when an
//     assignment repeats (its centres would not move).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

// out[i * k + r] = ‖points_i - centres_r‖². Both have the same columns.
std::vector<float> SquaredDistances(const Matrix& points, const Matrix& centres);

// out[i] = ‖points_i - points_seed‖².
std::vector<float> DistancesToPoint(const Matrix& points, uint32_t seed);

// The weighted D² rule: the first seed with probability ∝ w_i, each next
// with probability ∝ w_i min_s d(i, s) over the seeds so far. It sees only
// distances, so a participant runs it on its own data and the server runs
// the same rule on summed distances (joint seeding). When every point with
// weight coincides with a seed (no mass left), the next seed is the
// lowest-index point not yet chosen (so a cluster may end up empty, which
// the centre update tolerates).
class SeedSampler {
 public:
  // weights: one per point, non-negative, or empty for all ones.
  SeedSampler(uint32_t points, Span<const double> weights, uint64_t seed);

  uint32_t points() const { return points_; }
  const std::vector<uint32_t>& seeds() const { return seeds_; }

  // The first seed. Call once, before anything else.
  uint32_t First();
  // Distances of every point to the latest seed (min-updates D).
  [[nodiscard]] Status Observe(Span<const float> distances_to_latest);
  // The next seed, from the distances observed so far.
  uint32_t Next();

 private:
  uint32_t Draw(const std::vector<double>& mass);

  uint32_t points_;
  std::vector<double> weights_;
  std::vector<double> nearest_;  // min distance to the seeds so far
  std::vector<uint32_t> seeds_;
  std::vector<bool> chosen_;
  SplitMix64 rng_;
};

// k-means++ on one matrix: k point indices (kInvalidArgument for k = 0, no
// points, or weights of the wrong size).
[[nodiscard]] Result<std::vector<uint32_t>> KMeansPlusPlus(const Matrix& points, Span<const double> weights, uint32_t k,
                                                           uint64_t seed);

// From n x k distances (row-major, as SquaredDistances lays them out).
Assignment AssignNearest(Span<const float> distances, size_t n, uint32_t k);
Assignment AssignOneNinth(Span<const float> distances, size_t n, uint32_t k);

// Each cluster's centre <- the weighted mean of its assigned points; a
// cluster without weight keeps its row. Returns the clusters' weights.
// weights: one per point or empty (all ones); kInvalidArgument on shapes.
[[nodiscard]] Result<std::vector<double>> UpdateCentres(const Matrix& points, Span<const double> weights,
                                                        const Assignment& assignment, Matrix* centres);

// Σ_i w_i ‖points_i - centres_{a(i)}‖² over the assigned points: the k-means
// objective (kCAGC Eq. 1), which picks the best of several restarts.
double Inertia(const Matrix& points, Span<const double> weights, const Assignment& assignment, const Matrix& centres);

struct LloydResult {
  Assignment assignment;    // every point assigned
  uint32_t iterations = 0;  // distance computations made (each a secure round when distributed)
  bool converged = false;   // stopped because an assignment repeated
};

// At most max_iterations of Lloyd from *centres (updated in place).
// previous: the assignment the centres came from (e.g. the 1/9 step), or
// null.
[[nodiscard]] Result<LloydResult> Lloyd(const Matrix& points, Span<const double> weights, Matrix* centres,
                                        uint32_t max_iterations, const Assignment* previous);

}  // namespace nodefl::kcagc
