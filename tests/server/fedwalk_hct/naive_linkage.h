// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The oracle the clustering tests check ClusterNnChain against; not part of
// the server, which clusters only with the nearest-neighbour chain.
#pragma once

#include <optional>
#include <vector>

#include "nodefl/server/fedwalk/hct/linkage.h"

namespace nodefl::server::fedwalk {

// The textbook O(n^3) greedy algorithm. Each step joins the closest pair of
// clusters (ties: smallest (a, b) node ids), and cluster distances are
// recomputed from the original point distances by their definition (mean /
// max / min over member pairs), in double. Refuses a matrix with NaN or
// +-inf, as ClusterNnChain does.
std::optional<std::vector<Merge>> ClusterNaive(const CondensedMatrix& d, Linkage linkage = Linkage::kAverage);

}  // namespace nodefl::server::fedwalk
