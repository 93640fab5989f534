// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The small undirected graphs a device trains on, in CSR form over caller
// memory: node i's neighbours are neighbours[row_begin[i] .. row_begin[i+1]),
// without self loops (the layers add the self term themselves).
//
// Lumos Sec. V-A builds a device u's tree T(u) from its kept neighbours
// N_u (wl(u) = |N_u|): one leaf pair (u, v) per kept neighbour, a virtual
// parent above each pair, a virtual root above the parents. Node ids:
//   0                 the root
//   1 + k             the parent of pair k (k = 0 .. wl-1)
//   1 + wl + 2k       pair k's leaf for u itself
//   2 + wl + 2k       pair k's leaf for the neighbour N_u[k]
// so 3 wl + 1 nodes and 3 wl edges. The ablation "without virtual nodes"
// (Lumos Sec. VI, "w.o. VN") trains on the ego network as a device sees
// it, a star: node 0 is u, node 1 + k the neighbour N_u[k].
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::gnn {

struct GraphView {
  uint32_t nodes = 0;
  Span<const uint32_t> row_begin;   // nodes + 1
  Span<const uint32_t> neighbours;  // row_begin[nodes]
  uint32_t degree(uint32_t i) const { return row_begin[i + 1] - row_begin[i]; }
  // Directed entries including one self loop per node (what GAT keeps
  // attention coefficients for).
  size_t entries_with_self() const { return size_t{nodes} + neighbours.size(); }
};

enum class TreeKind : uint8_t {
  kLumosTree,  // Sec. V-A, with virtual parents and root
  kEgoStar,    // without virtual nodes (the ablation)
};

struct TreeSize {
  uint32_t nodes = 0;
  uint32_t csr_entries = 0;  // neighbours' length (twice the edges)
};
TreeSize SizeOfTree(TreeKind kind, uint32_t workload);

// Which node stands for what (for filling features and for pooling).
struct TreeNodes {
  TreeKind kind = TreeKind::kLumosTree;
  uint32_t workload = 0;
  // The node of u's own leaf in pair k (the tree) or u itself (the star).
  uint32_t OwnLeaf(uint32_t k) const { return kind == TreeKind::kLumosTree ? 1 + workload + 2 * k : 0; }
  // The node standing for neighbour N_u[k].
  uint32_t NeighbourLeaf(uint32_t k) const { return kind == TreeKind::kLumosTree ? 2 + workload + 2 * k : 1 + k; }
  // How many nodes stand for u itself.
  uint32_t own_leaves() const { return kind == TreeKind::kLumosTree ? workload : 1; }
  bool IsVirtual(uint32_t node) const { return kind == TreeKind::kLumosTree && node <= workload; }
};

// Writes the CSR of the tree (or star) for `workload` kept neighbours into
// caller memory and returns its view. kResourceExhausted when the spans are
// shorter than SizeOfTree() says (nodes + 1 and csr_entries).
Result<GraphView> BuildTree(TreeKind kind, uint32_t workload, Span<uint32_t> row_begin, Span<uint32_t> neighbours);

}  // namespace nodefl::gnn
