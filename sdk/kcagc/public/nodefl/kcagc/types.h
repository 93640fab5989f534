// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The shapes every kCAGC step shares. A participant (kCAGC Sec. 3.1.2: an
// organisation holding the whole graph and a slice of the feature columns)
// keeps its slice as a dense row-major float matrix: n rows (nodes) by m_l
// columns. Float, not double: Facebook's 22,470 x 4,714 matrix is 420 MB
// in float; the distances and means that matter are accumulated in double
// where the sum is long.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "nodefl/core/span.h"

namespace nodefl::kcagc {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The shared graph as CSR (the layout of the dataset reader): the
// neighbours of v are neighbours[offsets[v] .. offsets[v + 1]), each
// undirected edge listed from both ends, no self loops.
struct GraphView {
  uint32_t num_nodes = 0;
  Span<const uint64_t> offsets;     // num_nodes + 1 entries
  Span<const uint32_t> neighbours;  // offsets[num_nodes] entries
};

// A clustering of n points: per point its cluster in [0, k), or
// kUnassigned (the 1/9 step of kCAGC Protocol 1 leaves ambiguous points out).
inline constexpr int32_t kUnassigned = -1;
using Assignment = std::vector<int32_t>;

// Non-empty groups of nodes (kCAGC Protocol 3 lines 4-10: the intersections
// of the participants' clusters, which P_L sends to every participant):
// group g holds nodes[offsets[g] .. offsets[g + 1]) in increasing order, and
// keys[g * parts + p] is the cluster of part p (a participant, or a subtree
// in the tree arrangement) that contains all of them.
struct Intersections {
  uint32_t parts = 0;
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> nodes;
  std::vector<int32_t> keys;

  uint32_t size() const { return static_cast<uint32_t>(offsets.size() - 1); }
  uint32_t group_size(uint32_t g) const { return offsets[g + 1] - offsets[g]; }
  int32_t key(uint32_t g, uint32_t part) const { return keys[static_cast<size_t>(g) * parts + part]; }
};

}  // namespace nodefl::kcagc
