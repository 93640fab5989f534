// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The projection of kCAGC Protocol 1 line 4 (and Protocol 2 line 5): a
// participant's filtered slice X (n x m) onto the subspace of its top k
// right singular vectors, V (m x k, orthonormal columns, by decreasing
// singular value); the coordinates are X V (n x k). Seeding and the 1/9
// step work on these coordinates; the centres and Lloyd's steps work on X
// itself (Awasthi and Sheffet's algorithm, which Protocol 1 follows).
//
// Two methods give the same subspace:
//   exact     the eigenvectors of the Gram matrix of the smaller side (X^T X
//             or X X^T, in double) by Eigen's SelfAdjointEigenSolver;
//   subspace  block subspace iteration (Halko, Martinsson and Tropp 2011,
//             Alg. 4.4 with a final Rayleigh-Ritz step) on k + p vectors
//             with p = max(10, k) oversampling, until the top k values
//             settle: O(n m (k + p)) per step instead of O(min(n,m)^2 max(n,m)).
// kAuto takes the exact method while the smaller side is at most 512 (a
// small Gram matrix: cheap and exact), subspace iteration above (Cora's
// slices of more than 512 columns, Facebook's slices).
//
// This subspace method iterates on the right side (X^T X, m x b blocks) and
// is what every participant runs on its own slice. The whole matrix's
// whitened space (the centralized baseline) is computed instead by the left
// iteration of spectral.h (X X^T, n x b blocks), because that is the one
// the joint mode can run across participants: X X^T is the sum of the
// slices' X^l (X^l)^T, X^T X is not a sum of anything a participant holds.
// Both converge to the same subspace (to the tolerance); the slices keep
// this method so that their measured results, and the networked job that
// reproduces them, stay as they are.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

enum class ProjectionMethod : uint8_t { kAuto, kExact, kSubspace };

struct ProjectionOptions {
  ProjectionMethod method = ProjectionMethod::kAuto;
  uint64_t seed = 1;            // subspace iteration's start block
  uint32_t max_steps = 300;     // subspace iteration
  double tolerance = 1e-6;      // relative change of the top k values per step
};

// Whether `options` take the exact method for an n x m matrix (kExact, or
// kAuto with min(n, m) <= 512).
bool TakesExactMethod(const ProjectionOptions& options, int64_t rows, int64_t cols);

// V: m x k. kInvalidArgument for k = 0 or k > min(n, m).
[[nodiscard]] Result<Matrix> TopRightSingularVectors(const Matrix& x, uint32_t k,
                                                     const ProjectionOptions& options = {});

// X V: n x k coordinates. kInvalidArgument when the shapes differ.
[[nodiscard]] Result<Matrix> Project(const Matrix& x, const Matrix& basis);

// The space a participant clusters in, chosen once for a whole job:
//   kFull       the filtered slice itself: Protocol 1 lines 12-22 as written
//               (Awasthi and Sheffet: seed on the projection, then Lloyd on
//               the data)
//   kProjected  its projection X V on the top `dims` right singular vectors
//   kWhitened   X V Σ^-1, the top `dims` left singular vectors U (each
//               coordinate scaled to unit norm): the embedding AGC runs
//               k-means on
// docs/kcagc.md compares them; the job works unchanged on the rows this
// returns (for kProjected and kWhitened, the projection that seeding then
// makes is a rotation, so it changes no distance).
enum class ClusterSpace : uint8_t { kFull, kProjected, kWhitened };

// The rows P_l clusters: *x itself for kFull, else replaced by its n x d
// projection (d = min(dims, n, m)). kInvalidArgument for dims = 0 or an
// empty slice.
[[nodiscard]] Status ToClusterSpace(ClusterSpace space, uint32_t dims, const ProjectionOptions& options, Matrix* x);

}  // namespace nodefl::kcagc
