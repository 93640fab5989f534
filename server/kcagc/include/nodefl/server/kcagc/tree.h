// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The tree arrangement for many participants (kCAGC Sec. 3.4, end): the
// participants are the leaves of a binary tree; every internal node runs
// Protocol 3 among the participants below it, over the intersections of its
// two children's clusterings (a leaf's: its k̂ local clusters from Protocol
// 1), and yields k̂ clusters, the root k. The tree here splits the
// participants 0..L-1 in halves recursively (the left half takes the odd
// one), so its depth is ceil(log2 L) and it has exactly L - 1 internal nodes
// for any L, a power of two or not.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"

namespace nodefl::server::kcagc {

struct TreeNode {
  int32_t left = -1;   // child node index, -1 for a leaf
  int32_t right = -1;
  uint32_t first = 0;  // the participants below: first .. first + count - 1
  uint32_t count = 1;
  uint32_t depth = 0;  // the root is 0

  bool leaf() const { return left < 0; }
};

struct Tree {
  std::vector<TreeNode> nodes;           // leaves first: node l is participant l
  uint32_t root = 0;
  std::vector<uint32_t> internal_order;  // internal nodes, children before parents

  uint32_t internal_count() const { return static_cast<uint32_t>(internal_order.size()); }
};

// kInvalidArgument for 0 leaves.
[[nodiscard]] Result<Tree> BuildTree(uint32_t leaves);

}  // namespace nodefl::server::kcagc
