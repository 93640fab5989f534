// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC Protocol 3 lines 4-9 at P_L: the intersections of the parts'
// clusterings (each participant's k̂ local clusters; in the tree arrangement
// the two children's clusters). Intersecting part by part as the protocol
// does equals grouping the nodes by their tuple of clusters; only non-empty
// intersections are kept (at most min(n, k̂^parts)), in the order of their
// smallest node, so every participant indexes the virtual nodes alike.
#pragma once

#include <span>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::server::kcagc {

// parts: one complete assignment each, all over the same n nodes.
// kInvalidArgument for no parts, sizes that differ or an unassigned node.
[[nodiscard]] Result<nodefl::kcagc::Intersections> Intersect(std::span<const nodefl::kcagc::Assignment> parts);

// A clustering of the n nodes from one cluster per group (Protocol 3 line 17:
// every node takes its intersection's cluster).
nodefl::kcagc::Assignment SpreadToNodes(const nodefl::kcagc::Intersections& groups,
                                        const nodefl::kcagc::Assignment& group_clusters, uint32_t nodes);

}  // namespace nodefl::server::kcagc
