// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Dynamic time warping with an L1 row cost: the paper-mode dissimilarity of
// two ordered degree matrices (FedWalk Eq. 6-7).
//
//   cost(0, 0) = 0, cost(i, 0) = cost(0, j) = +inf for i, j > 0,
//   cost(i, j) = min(cost(i-1, j), cost(i, j-1), cost(i-1, j-1)) + |a_i - b_j|_1,
//   dissim(a, b) = cost(x, y) for x rows of a and y rows of b.
//
// Empty matrices (a vertex without neighbours), which the paper leaves
// undefined: both empty -> 0; exactly one empty -> the sum of the L1 norms of
// the other's rows, i.e. the cost of matching every row against an all-zero
// row. That keeps dissim symmetric, zero only against another empty matrix,
// and growing with the other vertex's degree, as an isolated vertex should.
//
// Both functions are exactly symmetric: dissim(a, b) == dissim(b, a) bit for
// bit (|p - q| == |q - p| in IEEE arithmetic and min is exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace nodefl::server::fedwalk {

// Per-thread scratch space of DtwL1: one rolling cost row, sized for the
// inner matrix of the largest pair seen so far. Grows only, so a warmed
// workspace makes DtwL1 allocation-free. Not shared between threads.
class DtwWorkspace {
 public:
  // Buffers of at least the given element counts; contents unspecified.
  double* CostRow(size_t n);
  // Copies in FeatureStore's layout, used by the row-major overload.
  float* PackedA(size_t n);
  float* PackedB(size_t n);
  size_t bytes() const;

 private:
  std::vector<double> cost_;
  std::vector<float> packed_a_;
  std::vector<float> packed_b_;
};

// Relative error bound of DtwL1 against the exact value (and so against
// the textbook DtwL1Reference next to nodefl-dtw-bench, whose own error is
// ~1e-12 relative): |fast - exact| <=
// DtwRelativeTolerance(k) * exact. Why this bound: each cell's distance is
// computed in float (k subtractions and k-1 additions of non-negative terms,
// each rounding by at most 2^-24 relative), and every DTW path sums such
// cells in double, so every candidate path and therefore their minimum is
// off by at most (k + 1) * 2^-24 relative (~1e-6 for k = 16). Identical
// matrices give exactly 0.
constexpr double DtwRelativeTolerance(size_t k) {
  return static_cast<double>(k + 1) / 16777216.0;  // (k + 1) * 2^-24
}

// The fast exact DTW: the same recurrence evaluated 8 cells at a time along
// anti-diagonals of 8-row blocks (dtw.cc explains), distances vectorised
// over the store's contiguous columns. Whichever orientation needs fewer
// sweep steps is used (usually the shorter matrix is the inner one); memory
// is one cost row of the inner length in `workspace`. Both views must have
// the same k.
double DtwL1(const OrderedMatrixView& a, const OrderedMatrixView& b, DtwWorkspace& workspace);

// Same for row-major input (k floats per row): the
// matrices are first packed column-major into the workspace.
double DtwL1(const float* a, size_t rows_a, const float* b, size_t rows_b, size_t k,
             DtwWorkspace& workspace);

}  // namespace nodefl::server::fedwalk
