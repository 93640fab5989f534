// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DtwL1Reference: FedWalk Eq. 6-7 written down as directly as possible. Deliberately
// naive (allocates the whole matrix, recomputes every distance in double) so
// it is easy to check by eye and serves as the benchmark's baseline.
#include "dtw_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace nodefl::server::fedwalk {
namespace {

double RowL1Norms(const float* m, size_t rows, size_t k) {
  double total = 0;
  for (size_t i = 0; i < rows * k; ++i) total += std::fabs(static_cast<double>(m[i]));
  return total;
}

}  // namespace

double DtwL1Reference(const float* a, size_t rows_a, const float* b, size_t rows_b, size_t k) {
  if (rows_a == 0) return RowL1Norms(b, rows_b, k);  // 0 when both are empty
  if (rows_b == 0) return RowL1Norms(a, rows_a, k);

  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(rows_a + 1, std::vector<double>(rows_b + 1, inf));
  cost[0][0] = 0;
  for (size_t i = 1; i <= rows_a; ++i) {
    for (size_t j = 1; j <= rows_b; ++j) {
      double distance = 0;
      for (size_t c = 0; c < k; ++c) {
        distance += std::fabs(static_cast<double>(a[(i - 1) * k + c]) - static_cast<double>(b[(j - 1) * k + c]));
      }
      cost[i][j] = std::min({cost[i - 1][j], cost[i][j - 1], cost[i - 1][j - 1]}) + distance;
    }
  }
  return cost[rows_a][rows_b];
}

}  // namespace nodefl::server::fedwalk
