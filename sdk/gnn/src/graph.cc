// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/graph.h"

namespace nodefl::gnn {

TreeSize SizeOfTree(TreeKind kind, uint32_t workload) {
  if (kind == TreeKind::kEgoStar) return TreeSize{workload + 1, 2 * workload};
  return TreeSize{3 * workload + 1, 6 * workload};
}

Result<GraphView> BuildTree(TreeKind kind, uint32_t workload, Span<uint32_t> row_begin, Span<uint32_t> neighbours) {
  const TreeSize size = SizeOfTree(kind, workload);
  if (row_begin.size() < size_t{size.nodes} + 1 || neighbours.size() < size.csr_entries) {
    return Status::ResourceExhausted();
  }
  const TreeNodes at{kind, workload};
  uint32_t cursor = 0;
  auto begin_row = [&](uint32_t node) { row_begin[node] = cursor; };
  auto add = [&](uint32_t to) { neighbours[cursor++] = to; };
  if (kind == TreeKind::kEgoStar) {
    begin_row(0);
    for (uint32_t k = 0; k < workload; ++k) add(at.NeighbourLeaf(k));
    for (uint32_t k = 0; k < workload; ++k) {
      begin_row(at.NeighbourLeaf(k));
      add(0);
    }
  } else {
    begin_row(0);
    for (uint32_t k = 0; k < workload; ++k) add(1 + k);
    for (uint32_t k = 0; k < workload; ++k) {
      begin_row(1 + k);
      add(0);
      add(at.OwnLeaf(k));
      add(at.NeighbourLeaf(k));
    }
    for (uint32_t k = 0; k < workload; ++k) {
      begin_row(at.OwnLeaf(k));
      add(1 + k);
      begin_row(at.NeighbourLeaf(k));
      add(1 + k);
    }
  }
  row_begin[size.nodes] = cursor;
  return GraphView{size.nodes, Span<const uint32_t>(row_begin.data(), size_t{size.nodes} + 1),
                   Span<const uint32_t>(neighbours.data(), cursor)};
}

}  // namespace nodefl::gnn
