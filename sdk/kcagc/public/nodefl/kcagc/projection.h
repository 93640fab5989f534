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
// 2,708 x 1,433 whole matrix, Facebook's slices).
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
