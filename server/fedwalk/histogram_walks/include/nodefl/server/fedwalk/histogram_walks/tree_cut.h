// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A public partition cut from the strict HCT job's clustering tree (the
// partition the issue first suggests for strict FedWalk): undo the tree's
// clusters - 1 highest merges, so that each remaining subtree is one
// cluster. The tree is post-processing of the HCT job's releases, which a
// device's total epsilon must then include.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::fedwalk {

// Cluster of every vertex id below `vertex_count` (kAbsentCluster for ids
// that are not leaves). `clusters` is capped at the leaf count.
std::vector<uint16_t> CutTreeIntoClusters(const HctTree& tree, uint32_t vertex_count, uint32_t clusters);

}  // namespace nodefl::server::fedwalk
