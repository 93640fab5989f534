// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Benchmark input: the ordered degree matrices (seed Eq. 5) that paper-mode
// devices would upload for a whole graph, produced in one process. Not the
// device code and not private (std::mt19937_64 noise): it only has to give
// the DTW realistic shapes and values.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"

namespace nodefl::server::fedwalk::bench {

// Row-major matrices: vertex v's rows[v] rows of `bins` floats start at
// values[offsets[v]].
struct DegreeMatrices {
  uint32_t bins = 0;
  std::vector<uint32_t> rows;
  std::vector<uint64_t> offsets;
  std::vector<float> values;

  const float* matrix(uint32_t v) const { return values.data() + offsets[v]; }
};

// 1. a random bin plan: vertices shuffled and dealt round-robin into `bins`
//    bins, so every bin is non-empty when the graph has >= bins vertices;
// 2. every vertex's degree vector c_v: neighbours per bin + Laplace(1/epsilon);
// 3. every vertex's matrix: its neighbours' c_u, sorted ascending by the
//    estimated degree sum(c_u) (ties by vertex id).
DegreeMatrices BuildDeviceDegreeMatrices(const dataset::Graph& graph, uint32_t bins, double epsilon,
                                         uint64_t seed);

}  // namespace nodefl::server::fedwalk::bench
