// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/tree.h"

namespace nodefl::server::kcagc {
namespace {

uint32_t Build(Tree* t, uint32_t first, uint32_t count) {
  if (count == 1) return first;
  const uint32_t half = (count + 1) / 2;
  const uint32_t left = Build(t, first, half);
  const uint32_t right = Build(t, first + half, count - half);
  TreeNode node;
  node.left = static_cast<int32_t>(left);
  node.right = static_cast<int32_t>(right);
  node.first = first;
  node.count = count;
  t->nodes.push_back(node);
  const auto index = static_cast<uint32_t>(t->nodes.size() - 1);
  t->internal_order.push_back(index);
  return index;
}

void SetDepth(Tree* t, uint32_t node, uint32_t depth) {
  t->nodes[node].depth = depth;
  if (t->nodes[node].leaf()) return;
  SetDepth(t, static_cast<uint32_t>(t->nodes[node].left), depth + 1);
  SetDepth(t, static_cast<uint32_t>(t->nodes[node].right), depth + 1);
}

}  // namespace

Result<Tree> BuildTree(uint32_t leaves) {
  if (leaves == 0) return Status::InvalidArgument();
  Tree t;
  t.nodes.resize(leaves);
  for (uint32_t l = 0; l < leaves; ++l) t.nodes[l].first = l;
  t.root = Build(&t, 0, leaves);
  SetDepth(&t, t.root, 0);
  return t;
}

}  // namespace nodefl::server::kcagc
