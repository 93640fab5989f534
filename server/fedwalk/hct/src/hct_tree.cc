// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/hct/hct_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {
namespace {

bool DistinctPresentVertices(std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  if (!ids.empty() && ids.back() == nodefl::fedwalk::kAbsentVertex) return false;
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

}  // namespace

std::optional<HctTree> HctTree::FromMerges(std::span<const Merge> merges, std::vector<uint32_t> leaf_vertex) {
  return Assemble(merges, std::move(leaf_vertex), /*sizes_given=*/true);
}

std::optional<HctTree> HctTree::Assemble(std::span<const Merge> merges, std::vector<uint32_t> leaf_vertex,
                                         bool sizes_given) {
  // 2m - 1 node ids must fit below kNoParent.
  if (leaf_vertex.size() > 0x7FFFFFFFu) return std::nullopt;
  const uint32_t m = static_cast<uint32_t>(leaf_vertex.size());
  if (merges.size() != (m == 0 ? 0 : size_t{m} - 1)) return std::nullopt;
  if (!DistinctPresentVertices(leaf_vertex)) return std::nullopt;

  HctTree t;
  const uint32_t nodes = m == 0 ? 0 : 2 * m - 1;
  t.parent_.assign(nodes, kNoParent);
  t.size_.assign(nodes, 1);
  t.merges_.reserve(merges.size());
  float previous_height = -INFINITY;
  for (uint32_t i = 0; i < merges.size(); ++i) {
    const Merge& in = merges[i];
    const uint32_t id = m + i;
    // b < id keeps the structure acyclic (children exist before their
    // parent); "no parent yet" keeps every node used at most once. With
    // m - 1 merges and 2m - 2 non-root nodes, at most once means exactly
    // once, so the result is one tree rooted at 2m - 2.
    if (!(in.a < in.b && in.b < id)) return std::nullopt;
    if (t.parent_[in.a] != kNoParent || t.parent_[in.b] != kNoParent) return std::nullopt;
    const float height = static_cast<float>(in.height);
    if (!std::isfinite(height) || height < previous_height) return std::nullopt;
    previous_height = height;
    const uint32_t size = t.size_[in.a] + t.size_[in.b];
    if (sizes_given && in.size != size) return std::nullopt;
    t.parent_[in.a] = id;
    t.parent_[in.b] = id;
    t.size_[id] = size;
    t.merges_.push_back({in.a, in.b, double{height}, size});
  }
  t.leaf_vertex_ = std::move(leaf_vertex);

  // Top-down (parents have larger ids than their children): each child's
  // range starts where its parent's does, the second after the first.
  t.dfs_begin_.assign(nodes, 0);
  for (uint32_t i = static_cast<uint32_t>(t.merges_.size()); i-- > 0;) {
    const Merge& mg = t.merges_[i];
    t.dfs_begin_[mg.a] = t.dfs_begin_[m + i];
    t.dfs_begin_[mg.b] = t.dfs_begin_[m + i] + t.size_[mg.a];
  }
  t.dfs_leaves_.assign(m, 0);
  for (uint32_t leaf = 0; leaf < m; ++leaf) t.dfs_leaves_[t.dfs_begin_[leaf]] = leaf;
  return t;
}

void HctTree::LcaLeafCountsFrom(uint32_t leaf, std::span<uint32_t> out) const {
  if (leaf >= leaf_count() || out.size() != leaf_count()) std::abort();
  out[leaf] = 1;
  for (uint32_t node = leaf; parent_[node] != kNoParent; node = parent_[node]) {
    const uint32_t p = parent_[node];
    const Merge& mg = merges_[p - leaf_count()];
    const uint32_t sibling = mg.a == node ? mg.b : mg.a;
    const uint32_t begin = dfs_begin_[sibling];
    const uint32_t end = begin + size_[sibling];
    const uint32_t count = size_[p];
    for (uint32_t pos = begin; pos < end; ++pos) out[dfs_leaves_[pos]] = count;
  }
}

uint32_t HctTree::LcaLeafCount(uint32_t x, uint32_t y) const {
  std::vector<uint32_t> ancestors_of_x;
  for (uint32_t node = x; node != kNoParent; node = parent_[node]) ancestors_of_x.push_back(node);
  for (uint32_t node = y; node != kNoParent; node = parent_[node]) {
    if (std::find(ancestors_of_x.begin(), ancestors_of_x.end(), node) != ancestors_of_x.end()) {
      return size_[node];
    }
  }
  return 0;  // unreachable in a valid tree: both paths end at the root
}

std::vector<uint32_t> HctTree::NearestLeaves(uint32_t leaf, uint32_t count) const {
  std::vector<uint32_t> out;
  if (leaf >= leaf_count() || count == 0) return out;
  count = std::min(count, leaf_count());
  out.reserve(count);
  out.push_back(leaf);
  for (uint32_t node = leaf; out.size() < count; node = parent_[node]) {
    const Merge& mg = merges_[parent_[node] - leaf_count()];
    const uint32_t sibling = mg.a == node ? mg.b : mg.a;
    const uint32_t begin = dfs_begin_[sibling];
    const uint32_t end = begin + std::min<uint32_t>(size_[sibling], count - static_cast<uint32_t>(out.size()));
    for (uint32_t pos = begin; pos < end; ++pos) out.push_back(dfs_leaves_[pos]);
  }
  return out;
}

}  // namespace nodefl::server::fedwalk
