// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/tree_index.h"

#include <cmath>

#include "nodefl/core/assert.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::fedwalk {
namespace {

constexpr size_t kLeavesOffset = 4;

}  // namespace

Result<uint32_t> TreeIndex::LeafCount(ConstByteSpan tree) {
  if (tree.size() < 4) return Status::InvalidArgument();
  return LoadU32Le(tree.data());
}

uint32_t TreeIndex::FirstChild(uint32_t node) const {
  const size_t merge = node - leaves_;
  return LoadU32Le(tree_.data() + kLeavesOffset + 4 * size_t{leaves_} + kTreeMergeBytes * merge);
}

uint32_t TreeIndex::SecondChild(uint32_t node) const {
  const size_t merge = node - leaves_;
  return LoadU32Le(tree_.data() + kLeavesOffset + 4 * size_t{leaves_} + kTreeMergeBytes * merge + 4);
}

uint32_t TreeIndex::LeafVertex(uint32_t leaf) const {
  return LoadU32Le(tree_.data() + kLeavesOffset + 4 * size_t{leaf});
}

uint32_t TreeIndex::LeafOf(uint32_t vertex) const {
  return vertex < leaf_of_vertex_.size() ? leaf_of_vertex_[vertex] : kNone;
}

Status TreeIndex::Build(ConstByteSpan tree, uint32_t vertex_count, Span<uint32_t> parent,
                        Span<uint32_t> leaf_of_vertex) {
  leaves_ = 0;
  tree_ = ConstByteSpan();
  parent_ = Span<uint32_t>();
  leaf_of_vertex_ = Span<uint32_t>();
  NODEFL_TRY_ASSIGN(const uint32_t m, LeafCount(tree));
  if (m > vertex_count || tree.size() != TreeArtefactBytes(m)) return Status::DataLoss();
  if (parent.size() < NodeCount(m) || leaf_of_vertex.size() < vertex_count) {
    return Status::ResourceExhausted();
  }
  for (uint32_t& v : leaf_of_vertex.first(vertex_count)) v = kNone;
  for (uint32_t& p : parent.first(NodeCount(m))) p = kNone;
  const uint8_t* leaf_ids = tree.data() + kLeavesOffset;
  for (uint32_t i = 0; i < m; ++i) {
    const uint32_t v = LoadU32Le(leaf_ids + 4 * size_t{i});
    // A vertex that is two leaves would have two "nearest" positions.
    if (v >= vertex_count || leaf_of_vertex[v] != kNone) return Status::DataLoss();
    leaf_of_vertex[v] = i;
  }
  const uint8_t* merges = leaf_ids + 4 * size_t{m};
  for (uint32_t j = 0; j + 1 < m; ++j) {
    const uint32_t node = m + j;
    const uint32_t a = LoadU32Le(merges + kTreeMergeBytes * j);
    const uint32_t b = LoadU32Le(merges + kTreeMergeBytes * j + 4);
    // Children exist already and are merged only once: with m - 1 merges
    // that makes every node but the last a child exactly once, i.e. one
    // binary tree rooted at the last merge.
    if (a >= node || b >= node || a == b || parent[a] != kNone || parent[b] != kNone) {
      return Status::DataLoss();
    }
    parent[a] = node;
    parent[b] = node;
  }
  tree_ = tree;
  parent_ = parent.first(NodeCount(m));
  leaf_of_vertex_ = leaf_of_vertex.first(vertex_count);
  leaves_ = m;
  return Status::Ok();
}

namespace {

// Collects pool members from the leaves of one subtree, depth first.
class PoolCollector {
 public:
  PoolCollector(const TreeIndex& tree, ConstByteSpan bin_plan, uint32_t u, uint32_t exclude,
                Span<const uint32_t> quotas, Span<uint32_t> pool)
      : tree_(tree), bin_plan_(bin_plan), u_(u), exclude_(exclude), pool_(pool) {
    bins_ = quotas.size() < kMaxBins ? quotas.size() : kMaxBins;
    for (size_t i = 0; i < bins_; ++i) {
      left_[i] = quotas[i];
      wanted_ += quotas[i];
    }
  }

  bool done() const { return wanted_ == 0 || size_ == pool_.size(); }
  size_t size() const { return size_; }

  // Visits the leaves of the subtree rooted at `top` in depth-first order
  // (first child first), without a stack: after a leaf, climb while the
  // node is a second child; the first ancestor entered through its first
  // child continues with its second child's leftmost leaf.
  void Subtree(uint32_t top) {
    uint32_t node = Leftmost(top);
    for (;;) {
      Visit(node);
      if (done()) return;
      for (;;) {
        if (node == top) return;
        const uint32_t up = tree_.Parent(node);
        if (tree_.FirstChild(up) == node) {
          node = Leftmost(tree_.SecondChild(up));
          break;
        }
        node = up;
      }
    }
  }

 private:
  uint32_t Leftmost(uint32_t node) const {
    while (!tree_.IsLeaf(node)) node = tree_.FirstChild(node);
    return node;
  }

  void Visit(uint32_t leaf) {
    const uint32_t v = tree_.LeafVertex(leaf);
    if (v == u_ || v == exclude_ || v >= bin_plan_.size()) return;
    const uint8_t bin = bin_plan_[v];
    if (bin >= bins_ || left_[bin] == 0) return;
    --left_[bin];
    --wanted_;
    pool_[size_++] = v;
  }

  const TreeIndex& tree_;
  ConstByteSpan bin_plan_;
  uint32_t u_;
  uint32_t exclude_;
  Span<uint32_t> pool_;
  size_t bins_ = 0;
  uint32_t left_[kMaxBins] = {};
  uint64_t wanted_ = 0;
  size_t size_ = 0;
};

}  // namespace

size_t NearestInBins(const TreeIndex& tree, ConstByteSpan bin_plan, uint32_t u, uint32_t exclude,
                     Span<const uint32_t> quotas, Span<uint32_t> pool) {
  const uint32_t leaf = tree.LeafOf(u);
  if (leaf == TreeIndex::kNone) return 0;
  PoolCollector collector(tree, bin_plan, u, exclude, quotas, pool);
  uint32_t node = leaf;
  while (!collector.done()) {
    const uint32_t up = tree.Parent(node);
    if (up == TreeIndex::kNone) break;  // passed the root
    const uint32_t first = tree.FirstChild(up);
    collector.Subtree(first == node ? tree.SecondChild(up) : first);
    node = up;
  }
  return collector.size();
}

void CountLeavesPerBin(const TreeIndex& tree, ConstByteSpan bin_plan, Span<uint32_t> bin_sizes) {
  for (uint32_t& s : bin_sizes) s = 0;
  for (uint32_t leaf = 0; leaf < tree.leaves(); ++leaf) {
    const uint32_t v = tree.LeafVertex(leaf);
    if (v < bin_plan.size() && bin_plan[v] < bin_sizes.size()) ++bin_sizes[bin_plan[v]];
  }
}

void PoolQuotas(ConstByteSpan row_bytes, Span<const uint32_t> bin_sizes, Span<uint32_t> quotas) {
  NODEFL_CHECK(bin_sizes.size() == quotas.size() && row_bytes.size() >= 4 * quotas.size());
  for (size_t i = 0; i < quotas.size(); ++i) {
    const double c = static_cast<double>(LoadF32Le(row_bytes.data() + 4 * i));
    // Compare before converting: a huge (or infinite) estimate must not
    // overflow the integer; !(c > 0) also maps NaN to 0.
    if (!(c > 0.0)) {
      quotas[i] = 0;
      continue;
    }
    const double rounded = std::round(c);
    quotas[i] = rounded >= static_cast<double>(bin_sizes[i]) ? bin_sizes[i] : static_cast<uint32_t>(rounded);
  }
}

}  // namespace nodefl::fedwalk
