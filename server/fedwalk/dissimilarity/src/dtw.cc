// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The fast exact DTW. Two observations make it fast without changing a
// single cell's value:
//   1. The L1 distance of one outer row to ALL inner rows is k passes of
//      "d[j] += |s - column[j]|" over contiguous, zero-padded columns: a
//      fixed-width loop the compiler vectorises (8 floats per step with
//      AVX2). Doing it per cell instead costs a horizontal sum per cell.
//   2. Within one DP row every cell waits for its left neighbour (a min and
//      an add, ~8 cycles of latency). Running kRowBlock outer rows together,
//      cell j of row r only waits for row r-1 at j and row r at j-1, so the
//      out-of-order core overlaps kRowBlock independent chains.
// Built with -O3 (CMakeLists.txt); on x86-64 GCC/Clang also emit an AVX2
// clone picked at load time, other hosts use the portable default.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nodefl/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/dtw.h"

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define NODEFL_DTW_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef NODEFL_DTW_CLONES
#define NODEFL_DTW_CLONES
#endif

namespace nodefl::server::fedwalk {
namespace {

// Outer rows processed together; chosen by measurement (nodefl-dtw-bench):
// enough independent min/add chains to hide their latency, few enough that
// the block's accumulators and DP values stay in registers.
constexpr uint32_t kRowBlock = 8;
// Inner rows per tile: a block's distances for one tile (kRowBlock x kTile
// doubles, 16 KiB) stay in L1 cache between the two phases.
constexpr uint32_t kTile = 256;
static_assert(kTile % kMatrixLanes == 0);

constexpr double kInf = std::numeric_limits<double>::infinity();

// Generic vectors (GCC/Clang): one column chunk of kMatrixLanes floats, and
// its widening to double. Lowered to AVX2, SSE2 or NEON registers as the
// target allows; only used inside functions, never passed by value, so the
// vector ABI never matters.
typedef float Lanes __attribute__((vector_size(kMatrixLanes * sizeof(float))));
typedef uint32_t LaneBits __attribute__((vector_size(kMatrixLanes * sizeof(float))));
typedef double WideLanes __attribute__((vector_size(kMatrixLanes * sizeof(double))));
// For storing a WideLanes into a double array: a memcpy of the 64-byte value
// makes GCC bounce it through general registers.
typedef double WideStore __attribute__((vector_size(kMatrixLanes * sizeof(double)), aligned(alignof(double)), may_alias));

// d[r * kTile + (j - j0)] = |outer row r - inner row j|_1 for j0 <= j < j1
// (j0, j1 multiples of kMatrixLanes, j1 <= inner.pitch). Inner rows beyond
// inner.rows are zero padding: finite values the DP never reads. Each column
// chunk is loaded once for all kRows rows; the sums stay in registers.
template <uint32_t kRows>
[[gnu::always_inline]] inline void TileDistances(const float (&rows)[kRows][nodefl::fedwalk::kMaxBins],
                                                 uint32_t k, const OrderedMatrixView& inner, uint32_t j0,
                                                 uint32_t j1, double* __restrict d) {
  const LaneBits abs_mask = LaneBits{} + 0x7fffffffu;  // clears the sign: |x|
  for (uint32_t j = j0; j < j1; j += kMatrixLanes) {
    Lanes sum[kRows];
    for (uint32_t r = 0; r < kRows; ++r) sum[r] = Lanes{};
    for (uint32_t c = 0; c < k; ++c) {
      Lanes column;
      std::memcpy(&column, inner.columns + size_t{c} * inner.pitch + j, sizeof column);
      for (uint32_t r = 0; r < kRows; ++r) {
        const Lanes difference = rows[r][c] - column;
        sum[r] += (Lanes)((LaneBits)difference & abs_mask);  // same-size vector casts reinterpret bits
      }
    }
    for (uint32_t r = 0; r < kRows; ++r) {
      *reinterpret_cast<WideStore*>(d + size_t{r} * kTile + (j - j0)) = __builtin_convertvector(sum[r], WideLanes);
    }
  }
}

// Advances `cost` from cost(first, 0..y) (cost[0] = cost(first, 0)) to
// cost(first + kRows, 0..y): outer rows first+1 .. first+kRows of the DP
// (1-based), tile by tile. Cell (row r, j) waits only for (r-1, j) and
// (r, j-1), so the kRows chains of one j overlap in the core.
template <uint32_t kRows>
[[gnu::always_inline]] inline void Block(const OrderedMatrixView& outer, uint32_t first,
                                         const OrderedMatrixView& inner, double* __restrict cost,
                                         double* __restrict d) {
  float rows[kRows][nodefl::fedwalk::kMaxBins];
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t c = 0; c < outer.k; ++c) rows[r][c] = outer.at(first + r, c);
  }
  const uint32_t y = inner.rows;
  double left[kRows];  // cost(first + 1 + r, j - 1)
  for (uint32_t r = 0; r < kRows; ++r) left[r] = kInf;  // column 0 of rows >= 1
  double above_left = cost[0];                           // cost(first, j - 1)
  for (uint32_t j0 = 0; j0 < y; j0 += kTile) {
    TileDistances<kRows>(rows, outer.k, inner, j0, std::min(j0 + kTile, inner.pitch), d);
    const uint32_t tile_end = std::min(y, j0 + kTile);
    for (uint32_t j = j0 + 1; j <= tile_end; ++j) {
      const double above = cost[j];
      double diagonal = above_left;  // cost(row above, j - 1)
      double up = above;             // cost(row above, j)
      for (uint32_t r = 0; r < kRows; ++r) {
        const double old_left = left[r];
        const double value = std::min(std::min(diagonal, old_left), up) + d[size_t{r} * kTile + (j - 1 - j0)];
        diagonal = old_left;
        up = value;
        left[r] = value;
      }
      cost[j] = up;
      above_left = above;
    }
  }
  cost[0] = kInf;
}

// Both matrices non-empty; inner.rows is the DP row length. cost has
// inner.rows + 1 entries, d kRowBlock * kTile.
NODEFL_DTW_CLONES
double DtwKernel(const OrderedMatrixView& outer, const OrderedMatrixView& inner, double* cost, double* d) {
  const uint32_t y = inner.rows;
  cost[0] = 0;
  for (uint32_t j = 1; j <= y; ++j) cost[j] = kInf;
  uint32_t first = 0;
  for (; first + kRowBlock <= outer.rows; first += kRowBlock) Block<kRowBlock>(outer, first, inner, cost, d);
  // The remaining < kRowBlock rows in blocks of 4, 2, 1.
  static_assert(kRowBlock == 4 || kRowBlock == 8, "adjust the remainder blocks");
  if (kRowBlock > 4 && outer.rows - first >= 4) {
    Block<4>(outer, first, inner, cost, d);
    first += 4;
  }
  if (outer.rows - first >= 2) {
    Block<2>(outer, first, inner, cost, d);
    first += 2;
  }
  if (outer.rows - first >= 1) Block<1>(outer, first, inner, cost, d);
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

size_t Padded(size_t rows) { return (rows + kMatrixLanes - 1) / kMatrixLanes * kMatrixLanes; }

OrderedMatrixView Pack(const float* m, size_t rows, size_t k, float* out) {
  const size_t pitch = Padded(rows);
  if (pitch != 0) std::memset(out, 0, sizeof(float) * pitch * k);  // out may be null otherwise
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < k; ++c) out[c * pitch + r] = m[r * k + c];
  }
  return OrderedMatrixView{out, static_cast<uint32_t>(rows), static_cast<uint32_t>(pitch),
                           static_cast<uint32_t>(k)};
}

}  // namespace

double* DtwWorkspace::CostRow(size_t n) { return Grown(cost_, n); }
double* DtwWorkspace::Distances(size_t n) { return Grown(distances_, n); }
float* DtwWorkspace::PackedA(size_t n) { return Grown(packed_a_, n); }
float* DtwWorkspace::PackedB(size_t n) { return Grown(packed_b_, n); }
size_t DtwWorkspace::bytes() const {
  return (cost_.capacity() + distances_.capacity()) * sizeof(double) +
         (packed_a_.capacity() + packed_b_.capacity()) * sizeof(float);
}

double DtwL1(const OrderedMatrixView& a, const OrderedMatrixView& b, DtwWorkspace& workspace) {
  if (a.rows == 0) return RowL1Norms(b);  // 0 when both are empty
  if (b.rows == 0) return RowL1Norms(a);
  // The shorter matrix is the inner one: the working set (cost row,
  // distance block, inner columns) stays small and in L1 cache. Swapping is
  // exact (the DP is symmetric, see dtw.h).
  const bool a_outer = a.rows >= b.rows;
  const OrderedMatrixView& outer = a_outer ? a : b;
  const OrderedMatrixView& inner = a_outer ? b : a;
  double* cost = workspace.CostRow(size_t{inner.rows} + 1);
  double* d = workspace.Distances(size_t{kRowBlock} * kTile);
  return DtwKernel(outer, inner, cost, d);
}

double DtwL1(const float* a, size_t rows_a, const float* b, size_t rows_b, size_t k, DtwWorkspace& workspace) {
  const OrderedMatrixView va = Pack(a, rows_a, k, workspace.PackedA(Padded(rows_a) * k));
  const OrderedMatrixView vb = Pack(b, rows_b, k, workspace.PackedB(Padded(rows_b) * k));
  return DtwL1(va, vb, workspace);
}

}  // namespace nodefl::server::fedwalk
