// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The fast exact DTW: the same cells as DtwL1Reference, computed along
// anti-diagonals of blocks of kMatrixLanes outer rows.
//
// Why anti-diagonals: along a DP row every cell waits for its left
// neighbour (a min and an add of latency), and along a column for the cell
// above, but the 8 cells (i0 + 7 - r, j0 + r), r = 0 .. 7, of one
// anti-diagonal are independent. A block of 8 outer rows is therefore swept in y + 7 steps; in
// step t lane r holds the cell of outer row i0 + 7 - r (lane 7 is the top
// row) and inner column t - 7 + r. With that lane order:
//   * the 8 inner rows a step needs, t-7 .. t, are consecutive in a column:
//     one unaligned load per column, no gathers (FeatureStore's guard rows
//     make the out-of-range rows readable zeros);
//   * a lane's left neighbour is its own previous value, its upper neighbour
//     the previous value of lane r + 1 (one lane shift), its upper-left
//     neighbour that lane shift of one step earlier; lane 7 takes both from
//     the cost row of the block above.
// Per step: k vector L1 updates (float), one conversion to double, and the
// recurrence on two 4-double vectors. Cells outside the matrix stay +inf or
// never flow into real cells (lanes only feed lanes below them and
// columns to their right), so no step needs masking.
//
// Accuracy: distances are summed in float in the same order as the
// reference's double sums, costs are summed in double: see
// DtwRelativeTolerance in dtw.h. Built with -O3 (CMakeLists.txt); on x86-64
// GCC/Clang also emit an AVX2 clone chosen at load time, other targets use
// the portable default (generic vectors lower to SSE2, NEON, or scalars).
#include <cmath>
#include <cstring>
#include <limits>

#include "nodefl/core/assert.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/dissimilarity/dtw.h"

// Not in sanitizer builds (NODEFL_SANITIZED, CMakeLists.txt).
#if defined(__x86_64__) && defined(__has_attribute) && !defined(NODEFL_SANITIZED)
#if __has_attribute(target_clones)
#define NODEFL_DTW_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef NODEFL_DTW_CLONES
#define NODEFL_DTW_CLONES
#endif

namespace nodefl::server::fedwalk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
static_assert(kMatrixLanes == 8, "the lane shuffles below are written for 8 lanes");

// Generic vectors (GCC/Clang; __builtin_shufflevector needs GCC >= 12). Only
// used inside one function and never passed by value, so the vector calling
// convention never matters.
typedef float Lanes __attribute__((vector_size(8 * sizeof(float))));
typedef uint32_t LaneBits __attribute__((vector_size(8 * sizeof(float))));
typedef double Quad __attribute__((vector_size(4 * sizeof(double))));

// Sweeps outer rows first .. first+7 (0-based; rows past outer.rows are
// padding whose results are never used). On entry cost[j] = cost(first, j)
// for the DP's 1-based column j = 0 .. y; on exit cost[j] holds the DP row
// of outer row first + 7 - out_lane (1-based: first + 8 - out_lane), which
// is the block's last real row. cost must have y + kMatrixLanes entries
// (lane 7 reads up to column y + 7; the values there are ignored).
template <bool kFullBlock>
[[gnu::always_inline]] inline void SweepBlock(const OrderedMatrixView& outer, uint32_t first,
                                              const OrderedMatrixView& inner, double* __restrict cost,
                                              uint32_t out_lane) {
  const uint32_t k = outer.k;
  const uint32_t y = inner.rows;
  if constexpr (kFullBlock) out_lane = 0;

  // The block's outer rows, per column, in lane order (lane 7 = row first).
  Lanes outer_rows[nodefl::fedwalk::kMaxBins];
  for (uint32_t c = 0; c < k; ++c) {
    Lanes v;
    std::memcpy(&v, outer.columns + size_t{c} * outer.pitch + first, sizeof v);
    outer_rows[c] = __builtin_shufflevector(v, v, 7, 6, 5, 4, 3, 2, 1, 0);
  }
  const LaneBits abs_mask = LaneBits{} + 0x7fffffffu;  // clears the sign bit
  const Quad inf = Quad{} + kInf;

  // Lanes 0-3 and 4-7 of: this step's values (previous step's on entry to
  // the loop body) and the "upper" vector of the previous step.
  Quad value_low = inf, value_high = inf;
  Quad upper_low = inf, upper_high = {kInf, kInf, kInf, cost[0]};
  const uint32_t last_step = y + 6 - out_lane;  // lane out_lane reaches column y
  for (uint32_t t = 0; t <= last_step; ++t) {
    // Distances: lane r = |outer row (first + 7 - r) - inner row (t - 7 + r)|_1.
    const float* window = inner.columns + t - 7;  // may start in the guard rows
    Lanes sum = Lanes{};
    for (uint32_t c = 0; c < k; ++c) {
      Lanes inner_rows;
      std::memcpy(&inner_rows, window + size_t{c} * inner.pitch, sizeof inner_rows);
      const Lanes difference = outer_rows[c] - inner_rows;
      sum += (Lanes)((LaneBits)difference & abs_mask);  // same-size vector casts reinterpret bits
    }
    const Quad distance_low = __builtin_convertvector(__builtin_shufflevector(sum, sum, 0, 1, 2, 3), Quad);
    const Quad distance_high = __builtin_convertvector(__builtin_shufflevector(sum, sum, 4, 5, 6, 7), Quad);

    // Upper neighbours: lane r takes lane r + 1 of the previous step; lane 7
    // the block above's row at its column t + 1.
    const double above_value = cost[t + 1];
    const Quad above = {above_value, above_value, above_value, above_value};
    const Quad up_low = __builtin_shufflevector(value_low, value_high, 1, 2, 3, 4);
    const Quad up_high = __builtin_shufflevector(value_high, above, 1, 2, 3, 4);
    // min(up, upper-left, left) + distance; the upper-left neighbour is the
    // previous step's upper vector.
    Quad best_low = up_low < upper_low ? up_low : upper_low;
    Quad best_high = up_high < upper_high ? up_high : upper_high;
    best_low = best_low < value_low ? best_low : value_low;
    best_high = best_high < value_high ? best_high : value_high;
    value_low = best_low + distance_low;
    value_high = best_high + distance_high;
    upper_low = up_low;
    upper_high = up_high;

    // Lane out_lane is at column t - 6 + out_lane: the block's last real row.
    // Writing column j <= t + 1 never clobbers the "above" values still to
    // be read (columns t + 2 and later).
    if (t + out_lane >= 7) {
      double out;
      if constexpr (kFullBlock) {
        out = value_low[0];
      } else {
        out = out_lane < 4 ? value_low[out_lane] : value_high[out_lane - 4];
      }
      cost[t - 6 + out_lane] = out;
    }
  }
  cost[0] = kInf;  // cost(i, 0) = +inf for every DP row i >= 1
}

// Both matrices non-empty. cost has inner.rows + kMatrixLanes entries.
NODEFL_DTW_CLONES
double DtwKernel(const OrderedMatrixView& outer, const OrderedMatrixView& inner, double* cost) {
  const uint32_t y = inner.rows;
  cost[0] = 0;
  for (uint32_t j = 1; j < y + kMatrixLanes; ++j) cost[j] = kInf;
  uint32_t first = 0;
  for (; first + kMatrixLanes <= outer.rows; first += kMatrixLanes) {
    SweepBlock<true>(outer, first, inner, cost, 0);
  }
  if (first < outer.rows) {
    // The last real row, first + rows_left - 1, is in lane 8 - rows_left.
    SweepBlock<false>(outer, first, inner, cost, kMatrixLanes - (outer.rows - first));
  }
  return cost[y];
}

// Matching every row of m against an all-zero row (see dtw.h).
double RowL1Norms(const OrderedMatrixView& m) {
  double total = 0;
  for (uint32_t r = 0; r < m.rows; ++r) {
    float row = 0;
    for (uint32_t c = 0; c < m.k; ++c) row += std::fabs(m.at(r, c));
    total += row;
  }
  return total;
}

template <typename T>
T* Grown(std::vector<T>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace

double* DtwWorkspace::CostRow(size_t n) { return Grown(cost_, n); }
float* DtwWorkspace::PackedA(size_t n) { return Grown(packed_a_, n); }
float* DtwWorkspace::PackedB(size_t n) { return Grown(packed_b_, n); }
size_t DtwWorkspace::bytes() const {
  return cost_.capacity() * sizeof(double) + (packed_a_.capacity() + packed_b_.capacity()) * sizeof(float);
}

double DtwL1(const OrderedMatrixView& a, const OrderedMatrixView& b, DtwWorkspace& workspace) {
  NODEFL_CHECK(a.k == b.k);
  if (a.rows == 0) return RowL1Norms(b);  // 0 when both are empty
  if (b.rows == 0) return RowL1Norms(a);
  // Either matrix can be the inner one (the DP is symmetric, dtw.h): take
  // the orientation with fewer sweep steps. Blocks of 8 outer rows take
  // inner + 7 steps each, so a short inner matrix wastes steps on the
  // diagonal's ramp and a short outer one wastes lanes in its last block.
  const auto steps = [](const OrderedMatrixView& outer, const OrderedMatrixView& inner) {
    return uint64_t{(outer.rows + kMatrixLanes - 1) / kMatrixLanes} * (inner.rows + kMatrixLanes - 1);
  };
  const bool a_outer = steps(a, b) <= steps(b, a);
  const OrderedMatrixView& outer = a_outer ? a : b;
  const OrderedMatrixView& inner = a_outer ? b : a;
  return DtwKernel(outer, inner, workspace.CostRow(size_t{inner.rows} + kMatrixLanes));
}

double DtwL1(const float* a, size_t rows_a, const float* b, size_t rows_b, size_t k, DtwWorkspace& workspace) {
  NODEFL_CHECK(rows_a <= kMaxMatrixRows && rows_b <= kMaxMatrixRows && k >= 1 &&
               k <= nodefl::fedwalk::kMaxBins);
  const auto ra = static_cast<uint32_t>(rows_a);
  const auto rb = static_cast<uint32_t>(rows_b);
  const auto kk = static_cast<uint32_t>(k);
  const OrderedMatrixView va = PackOrderedMatrix(a, ra, kk, workspace.PackedA(OrderedMatrixFloats(ra, kk)));
  const OrderedMatrixView vb = PackOrderedMatrix(b, rb, kk, workspace.PackedB(OrderedMatrixFloats(rb, kk)));
  return DtwL1(va, vb, workspace);
}

}  // namespace nodefl::server::fedwalk
