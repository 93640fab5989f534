// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/hungarian.h"

#include <limits>

namespace nodefl::server::kcagc {
namespace {

// rows <= cols. Shortest augmenting paths over reduced costs
// a[i][j] - u[i] - v[j] >= 0; one row enters per outer step. Index 0 is a
// virtual column holding the row being placed.
std::vector<int32_t> Solve(std::span<const double> a, uint32_t rows, uint32_t cols) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> u(rows + 1, 0.0), v(cols + 1, 0.0);
  std::vector<uint32_t> row_of(cols + 1, 0), way(cols + 1, 0);  // row_of[j]: 1-based row in column j
  for (uint32_t i = 1; i <= rows; ++i) {
    row_of[0] = i;
    uint32_t j0 = 0;
    std::vector<double> slack(cols + 1, kInf);
    std::vector<bool> used(cols + 1, false);
    do {
      used[j0] = true;
      const uint32_t i0 = row_of[j0];
      double delta = kInf;
      uint32_t j1 = 0;
      for (uint32_t j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        const double reduced = a[static_cast<size_t>(i0 - 1) * cols + (j - 1)] - u[i0] - v[j];
        if (reduced < slack[j]) {
          slack[j] = reduced;
          way[j] = j0;
        }
        if (slack[j] < delta) {
          delta = slack[j];
          j1 = j;
        }
      }
      for (uint32_t j = 0; j <= cols; ++j) {
        if (used[j]) {
          u[row_of[j]] += delta;
          v[j] -= delta;
        } else {
          slack[j] -= delta;
        }
      }
      j0 = j1;
    } while (row_of[j0] != 0);
    // Flip the augmenting path back to the virtual column.
    do {
      const uint32_t j1 = way[j0];
      row_of[j0] = row_of[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int32_t> col_of(rows, -1);
  for (uint32_t j = 1; j <= cols; ++j) {
    if (row_of[j] != 0) col_of[row_of[j] - 1] = static_cast<int32_t>(j - 1);
  }
  return col_of;
}

}  // namespace

std::vector<int32_t> MinCostAssignment(std::span<const double> cost, uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || cost.size() != static_cast<size_t>(rows) * cols) return std::vector<int32_t>(rows, -1);
  if (rows <= cols) return Solve(cost, rows, cols);
  std::vector<double> t(cost.size());
  for (uint32_t i = 0; i < rows; ++i) {
    for (uint32_t j = 0; j < cols; ++j) t[static_cast<size_t>(j) * rows + i] = cost[static_cast<size_t>(i) * cols + j];
  }
  const std::vector<int32_t> row_of_col = Solve(t, cols, rows);
  std::vector<int32_t> out(rows, -1);
  for (uint32_t j = 0; j < cols; ++j) out[static_cast<size_t>(row_of_col[j])] = static_cast<int32_t>(j);
  return out;
}

}  // namespace nodefl::server::kcagc
