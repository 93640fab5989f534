// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/local_cluster.h"

#include <algorithm>

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

// Lines 4 (seeding) to 24 from one seed, on the projection already made.
Result<LocalClustering> OneRun(const Matrix& x, const Matrix& projected, uint32_t clusters, uint32_t iterations,
                               uint64_t seed) {
  LocalClustering out;
  NODEFL_TRY_ASSIGN(out.seeds, KMeansPlusPlus(projected, {}, clusters, seed));
  // Line 9 on the projection, with the seeds' projected rows as centres.
  Matrix seed_rows(clusters, projected.cols());
  out.centres.resize(clusters, x.cols());
  for (uint32_t r = 0; r < clusters; ++r) {
    seed_rows.row(r) = projected.row(out.seeds[r]);
    out.centres.row(r) = x.row(out.seeds[r]);  // kept if S_r stays empty
  }
  const std::vector<float> to_seeds = SquaredDistances(projected, seed_rows);
  const Assignment first = AssignOneNinth(to_seeds, static_cast<size_t>(x.rows()), clusters);
  out.unassigned_after_one_ninth = static_cast<uint32_t>(std::count(first.begin(), first.end(), kUnassigned));
  // Line 12: the centres on the slice itself.
  NODEFL_TRY_ASSIGN(const std::vector<double> mass, UpdateCentres(x, {}, first, &out.centres));
  (void)mass;
  // Lines 14-24.
  NODEFL_TRY_ASSIGN(LloydResult lloyd, Lloyd(x, {}, &out.centres, iterations, &first));
  out.assignment = std::move(lloyd.assignment);
  out.iterations = lloyd.iterations;
  out.converged = lloyd.converged;
  out.inertia = Inertia(x, {}, out.assignment, out.centres);
  return out;
}

}  // namespace

Result<LocalClustering> LocalCluster(const Matrix& x, const LocalClusterOptions& o) {
  if (o.clusters == 0 || o.restarts == 0 || x.rows() == 0 || x.cols() == 0 ||
      static_cast<Eigen::Index>(o.clusters) > x.rows() || !x.allFinite()) {
    return Status::InvalidArgument();
  }
  // Line 4: the projection, once for every restart. A slice with fewer
  // columns than k̂ is projected onto all of them.
  const auto dims = static_cast<uint32_t>(std::min<Eigen::Index>({static_cast<Eigen::Index>(o.clusters), x.rows(), x.cols()}));
  NODEFL_TRY_ASSIGN(Matrix basis, TopRightSingularVectors(x, dims, o.projection));
  NODEFL_TRY_ASSIGN(const Matrix projected, Project(x, basis));
  LocalClustering best;
  for (uint32_t r = 0; r < o.restarts; ++r) {
    NODEFL_TRY_ASSIGN(LocalClustering run, OneRun(x, projected, o.clusters, o.iterations, StreamSeed(o.seed, r)));
    if (r == 0 || run.inertia < best.inertia) {
      run.restart = r;
      best = std::move(run);
    }
  }
  best.basis = std::move(basis);
  return best;
}

}  // namespace nodefl::kcagc
