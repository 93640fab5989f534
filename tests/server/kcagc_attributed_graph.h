// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A small attributed graph for the kcagc job's tests: a planted partition
// (dataset::GeneratePlantedPartition, label = block) whose members share
// feature columns (node v of block b has column j with probability p_on
// when j % blocks == b, else p_off), so that clustering by graph and
// features is meaningful and fast.
#pragma once

#include <cstdint>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc_test {

inline dataset::Graph AttributedPlantedPartition(uint32_t blocks, uint32_t block_size, uint32_t columns,
                                                 uint64_t seed, double p_in = 0.25, double p_out = 0.02,
                                                 double p_on = 0.3, double p_off = 0.05) {
  dataset::Graph g = dataset::GeneratePlantedPartition(blocks, block_size, p_in, p_out, seed);
  nodefl::kcagc::SplitMix64 rng(seed ^ 0xfeedull);
  g.num_feature_dims = columns;
  g.feature_offsets.assign(1, 0);
  g.features.clear();
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    const uint32_t b = g.labels[g.label_offsets[v]];
    for (uint32_t j = 0; j < columns; ++j) {
      if (rng.Uniform() < (j % blocks == b ? p_on : p_off)) g.features.push_back(j);
    }
    g.feature_offsets.push_back(g.features.size());
  }
  return g;
}

}  // namespace nodefl::kcagc_test
