// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Agglomerative (bottom-up) hierarchical clustering of a CondensedMatrix:
// the hierarchical clustering tree (HCT) of FedWalk Sec. 4.2 is built by
// repeatedly joining the two closest clusters.
//
// Output follows scipy.cluster.hierarchy.linkage: the n inputs are nodes
// 0 .. n-1, merge i creates node n + i, every merge names two existing nodes
// with a < b, and the merges come in non-decreasing height.
//
// ClusterNnChain refuses a matrix holding NaN or +-inf (std::nullopt): the
// Lance-Williams updates would spread it through the whole tree, and a
// NaN height has no place in a sorted dendrogram. n = 0 or 1 gives an empty
// (engaged) merge list.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nodefl/server/fedwalk/common/condensed_matrix.h"

namespace nodefl::server::fedwalk {

// How the distance between two clusters follows from point distances.
// All three are "reducible" (merging two clusters never brings the result
// closer to a third cluster than both parts were), which is what lets the
// nearest-neighbour chain find the same tree as the greedy algorithm.
enum class Linkage {
  kAverage,   // UPGMA: mean over all cross pairs (the default)
  kComplete,  // maximum over cross pairs
  kSingle,    // minimum over cross pairs
};

struct Merge {
  uint32_t a = 0;       // node ids, a < b
  uint32_t b = 0;
  double height = 0;    // linkage distance between a and b
  uint32_t size = 0;    // inputs under the new node
  bool operator==(const Merge&) const = default;
};

// Nearest-neighbour-chain algorithm: O(n^2) time, O(n) memory beyond `d`,
// whose storage it consumes for the Lance-Williams updates (in double,
// stored back as float). Ties are broken deterministically (a chain prefers
// its previous element, otherwise the lowest index), so equal input gives
// equal output. With tied distances average and complete linkage have more
// than one valid tree; this returns one of them (each merge is a closest
// pair at the moment it is made).
std::optional<std::vector<Merge>> ClusterNnChain(CondensedMatrix&& d, Linkage linkage = Linkage::kAverage);

// True if every value of `d` is finite (the precondition of clustering).
bool AllFinite(const CondensedMatrix& d);

}  // namespace nodefl::server::fedwalk
