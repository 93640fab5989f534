// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Clustering against ground-truth classes, the three measures of kCAGC
// Sec. 4 and Appendix E.2:
//   accuracy  the share of nodes whose cluster is matched to their class,
//             under the one-to-one matching of clusters to classes that
//             maximises it (hungarian.h); with more clusters than classes
//             the clusters left over match nothing and their nodes count
//             as wrong, with fewer the classes left over get no cluster;
//   NMI       mutual information over the arithmetic mean of the two
//             entropies, I(U;V) / ((H(U) + H(V)) / 2) (scikit-learn's
//             default since 0.22); 1 when both are a single group;
//   macro-F1  per class, F1 of "in the cluster matched to it" (the same
//             matching), averaged over the classes present.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/core/result.h"

namespace nodefl::server::kcagc {

struct ClusteringScores {
  double accuracy = 0.0;
  double nmi = 0.0;
  double macro_f1 = 0.0;
  uint32_t scored = 0;    // nodes with a class
  uint32_t clusters = 0;  // cluster ids seen among them (max + 1)
  uint32_t classes = 0;   // class ids seen (max + 1)
};

// clusters[i] >= 0 for every node; labels[i] >= 0, or -1 for a node without
// a class (left out). kInvalidArgument for sizes that differ, an unassigned
// node or nothing to score.
[[nodiscard]] Result<ClusteringScores> ScoreClustering(std::span<const int32_t> clusters,
                                                       std::span<const int32_t> labels);

// NMI (arithmetic normalisation) from a contingency table (rows x cols
// counts, row-major).
double NormalizedMutualInformation(std::span<const double> table, uint32_t rows, uint32_t cols);

}  // namespace nodefl::server::kcagc
