// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Minimum-cost assignment (the Hungarian method with row and column
// potentials, O(r^2 c) for r <= c): the matching of clusters to classes
// behind clustering accuracy and macro-F1. Rectangular costs are fine: with
// more rows than columns, the columns are matched to rows instead and the
// rows left over get none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nodefl::server::kcagc {

// cost: rows x cols, row-major, finite. Returns the column of every row
// (distinct columns), or -1 for rows left over when rows > cols; the total
// cost of the matched pairs is the least possible.
std::vector<int32_t> MinCostAssignment(std::span<const double> cost, uint32_t rows, uint32_t cols);

}  // namespace nodefl::server::kcagc
