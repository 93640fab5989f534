// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The vertical split of a dataset among L simulated participants (kCAGC
// Sec. 3.1.2: every participant holds the whole graph and some of the
// feature columns): a seeded random permutation of the m columns cut into L
// contiguous chunks of near-equal size (the first m mod L chunks take one
// column more), each chunk sorted. A random split rather than "the first m/L
// columns" because the datasets' column order carries meaning (Cora's
// vocabulary is sorted); the seed makes it replayable.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::server::kcagc {

// L chunks of column ids (L <= m).
std::vector<std::vector<uint32_t>> SplitColumns(uint32_t columns, uint32_t participants, uint64_t seed);

// The dataset's binary features on `columns` as a dense n x |columns| slice.
nodefl::kcagc::Matrix DenseSlice(const dataset::Graph& graph, std::span<const uint32_t> columns);

// The dataset's adjacency as the participants' graph view (borrows `graph`).
nodefl::kcagc::GraphView GraphViewOf(const dataset::Graph& graph);

// One class per node (-1 for a node without one); false when some node has
// more than one (kCAGC's measures need single labels).
bool SingleLabels(const dataset::Graph& graph, std::vector<int32_t>* labels);

}  // namespace nodefl::server::kcagc
