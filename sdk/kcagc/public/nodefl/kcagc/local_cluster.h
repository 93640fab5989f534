// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC Protocol 1 on one participant's filtered slice (lines 4-24; lines
// 1-3, the filter, are graph_filter.h): project onto the top k̂ right
// singular vectors, seed k̂ centres by k-means++ on the projection, the 1/9
// step on the projection, centres as the means of the assigned rows of the
// slice itself (a seed whose S_r is empty keeps its own row), then at most
// Q Lloyd iterations on the slice. Protocol 3 line 2 runs this on every
// participant (k̂ local clusters), and the centralized baseline runs it on
// the whole filtered matrix (k clusters). No communication.
//
// Restarts: k-means from one seeding lands in a poor local optimum often
// (Cora's accuracy then varies by ±5 points from seed to seed), so the
// whole of lines 4-24 runs `restarts` times from independent seedings and
// the clustering of least inertia (the k-means objective, Eq. 1) is kept,
// as every k-means library does (AGC's baseline used scikit-learn's 10).
// They are local computation only: no secure sum and nothing revealed.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

struct LocalClusterOptions {
  uint32_t clusters = 0;    // k̂
  uint32_t iterations = 10;  // Q (kCAGC Sec. 3.5: at most 10)
  uint64_t seed = 1;         // k-means++ (restart r uses StreamSeed(seed, r))
  uint32_t restarts = 10;    // >= 1
  ProjectionOptions projection;
};

struct LocalClustering {
  Assignment assignment;          // every node, in [0, clusters)
  Matrix centres;                 // clusters x m_l, on the slice's own columns
  Matrix basis;                   // m_l x d: the projection (d = min(k̂, n, m_l))
  std::vector<uint32_t> seeds;    // k-means++'s point indices
  uint32_t unassigned_after_one_ninth = 0;
  uint32_t iterations = 0;        // Lloyd's
  bool converged = false;
  double inertia = 0.0;           // of the clustering kept
  uint32_t restart = 0;           // which restart it came from
};

// kInvalidArgument for clusters = 0, restarts = 0, more clusters than rows,
// or an empty or non-finite slice.
[[nodiscard]] Result<LocalClustering> LocalCluster(const Matrix& filtered, const LocalClusterOptions& options);

}  // namespace nodefl::kcagc
