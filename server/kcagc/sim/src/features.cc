// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/sim/features.h"

#include <algorithm>
#include <numeric>

#include "nodefl/kcagc/rng.h"

namespace nodefl::server::kcagc {

std::vector<std::vector<uint32_t>> SplitColumns(uint32_t columns, uint32_t participants, uint64_t seed) {
  std::vector<uint32_t> order(columns);
  std::iota(order.begin(), order.end(), 0u);
  nodefl::kcagc::SplitMix64 rng(nodefl::kcagc::StreamSeed(seed, 0x53504c4954ull));
  for (uint32_t i = columns; i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);  // Fisher-Yates
  std::vector<std::vector<uint32_t>> chunks(participants);
  if (participants == 0) return chunks;
  const uint32_t base = columns / participants, extra = columns % participants;
  uint32_t at = 0;
  for (uint32_t l = 0; l < participants; ++l) {
    const uint32_t size = base + (l < extra ? 1 : 0);
    chunks[l].assign(order.begin() + at, order.begin() + at + size);
    std::sort(chunks[l].begin(), chunks[l].end());
    at += size;
  }
  return chunks;
}

nodefl::kcagc::Matrix DenseSlice(const dataset::Graph& g, std::span<const uint32_t> columns) {
  std::vector<int32_t> local(g.num_feature_dims, -1);
  for (size_t j = 0; j < columns.size(); ++j) {
    if (columns[j] < g.num_feature_dims) local[columns[j]] = static_cast<int32_t>(j);
  }
  nodefl::kcagc::Matrix x = nodefl::kcagc::Matrix::Zero(g.num_nodes, static_cast<Eigen::Index>(columns.size()));
  if (g.feature_offsets.size() != static_cast<size_t>(g.num_nodes) + 1) return x;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    for (uint64_t e = g.feature_offsets[v]; e < g.feature_offsets[v + 1]; ++e) {
      const uint32_t f = g.features[e];
      if (f < local.size() && local[f] >= 0) x(v, local[f]) = 1.0f;
    }
  }
  return x;
}

nodefl::kcagc::GraphView GraphViewOf(const dataset::Graph& g) {
  nodefl::kcagc::GraphView view;
  view.num_nodes = g.num_nodes;
  view.offsets = Span<const uint64_t>(g.offsets.data(), g.offsets.size());
  view.neighbours = Span<const uint32_t>(g.neighbours.data(), g.neighbours.size());
  return view;
}

bool SingleLabels(const dataset::Graph& g, std::vector<int32_t>* labels) {
  labels->assign(g.num_nodes, -1);
  if (g.label_offsets.size() != static_cast<size_t>(g.num_nodes) + 1) return true;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    const uint64_t count = g.label_offsets[v + 1] - g.label_offsets[v];
    if (count > 1) return false;
    if (count == 1) (*labels)[v] = static_cast<int32_t>(g.labels[g.label_offsets[v]]);
  }
  return true;
}

}  // namespace nodefl::server::kcagc
