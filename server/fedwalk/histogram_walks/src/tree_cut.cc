// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/tree_cut.h"

#include <algorithm>
#include <numeric>

#include "nodefl/protocol/fedwalk/histogram_format.h"

namespace nodefl::server::fedwalk {

std::vector<uint16_t> CutTreeIntoClusters(const HctTree& tree, uint32_t vertex_count, uint32_t clusters) {
  std::vector<uint16_t> out(vertex_count, nodefl::fedwalk::kAbsentCluster);
  const uint32_t m = tree.leaf_count();
  if (m == 0 || clusters == 0) return out;
  clusters = std::min(clusters, m);
  // Apply the m - clusters lowest merges (merges are in non-decreasing
  // height) with a union-find over the tree's nodes.
  std::vector<uint32_t> root(tree.node_count());
  std::iota(root.begin(), root.end(), 0u);
  auto find = [&root](uint32_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  const auto merges = tree.merges();
  for (uint32_t i = 0; i < m - clusters; ++i) {
    const uint32_t joined = m + i;
    root[find(merges[i].a)] = joined;
    root[find(merges[i].b)] = joined;
  }
  std::vector<uint32_t> label(tree.node_count(), UINT32_MAX);
  uint32_t next = 0;
  for (uint32_t leaf = 0; leaf < m; ++leaf) {
    const uint32_t r = find(leaf);
    if (label[r] == UINT32_MAX) label[r] = next++;
    const uint32_t v = tree.leaf_vertex(leaf);
    if (v < vertex_count) out[v] = static_cast<uint16_t>(label[r]);
  }
  return out;
}

}  // namespace nodefl::server::fedwalk
