// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Splitting the n(n-1)/2 vertex pairs into chunks of similar cost, so that
// threads taking chunks from a shared counter finish together even though
// one DTW pair may cost 16 million cells (two hubs) and another one cell.
// A chunk is a run of one row of the condensed matrix, (row, first) ..
// (row, end - 1), which is contiguous in CondensedMatrix's layout and keeps
// the row vertex's features hot in cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nodefl::server::fedwalk {

struct PairChunk {
  uint32_t row = 0;    // vertex i
  uint32_t first = 0;  // pairs (i, j) for first <= j < end; i < first
  uint32_t end = 0;
};

// Estimated cost of one pair, in DP cells: the rows product plus terms for
// the per-row and per-pair work that does not scale with it.
inline constexpr uint64_t kPairOverheadCells = 32;
inline uint64_t PairCost(uint32_t size_i, uint32_t size_j) {
  return (uint64_t{size_i} + 1) * (uint64_t{size_j} + 1) + kPairOverheadCells;
}

// Splits all pairs of vertices 0 .. sizes.size()-1 (size = matrix rows, or 0
// when every pair costs the same) into chunks, in row order, each costing at
// most about total / target_chunks (and at least one pair). Every pair i < j
// is in exactly one chunk; a row yields at least one chunk.
std::vector<PairChunk> SplitPairs(std::span<const uint32_t> sizes, uint64_t target_chunks);

}  // namespace nodefl::server::fedwalk
