// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TreeIndex and the 2-hop predictor's pool (tree_index.h): a hand-checked
// tree, then random trees against a brute-force reference that knows
// nothing of the device's traversal: every leaf is ranked by the depth of
// its lowest common ancestor with u (deeper = nearer), ties by the leaf's
// position in the tree's depth-first order (first child first), and the
// pool takes the first leaves whose bin still has quota.
#include "nodefl/fedwalk/tree_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "fedwalk_test_artefacts.h"
#include "heap_counter.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::fedwalk {
namespace {

using testing::EncodeTree;
using testing::PutF32;
using testing::TestMerge;

constexpr uint32_t kNone = TreeIndex::kNone;

struct Indexed {
  explicit Indexed(std::vector<uint8_t> tree_bytes) : bytes(std::move(tree_bytes)) {}
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> parent, leaf_of;
  TreeIndex index;
  Status Build(uint32_t vertex_count) {
    Result<uint32_t> m = TreeIndex::LeafCount(bytes);
    if (!m.ok()) return m.status();
    parent.assign(TreeIndex::NodeCount(std::min<uint32_t>(*m, 1u << 20)), 0);
    leaf_of.assign(vertex_count, 0);
    return index.Build(bytes, vertex_count, parent, leaf_of);
  }
};

std::vector<uint32_t> Pool(const TreeIndex& t, const std::vector<uint8_t>& plan, uint32_t u, uint32_t exclude,
                           const std::vector<uint32_t>& quotas, size_t capacity) {
  std::vector<uint32_t> pool(capacity, 0xDEADBEEF);
  size_t n = 0;
  NODEFL_EXPECT_NO_HEAP(n = NearestInBins(t, plan, u, exclude, quotas, pool));
  pool.resize(n);
  return pool;
}

// ((1,2),3) and ((4,5),6) joined at the root; leaf i is vertex i + 1.
std::vector<uint8_t> SixLeafTree() {
  return EncodeTree({1, 2, 3, 4, 5, 6},
                    {{0, 1, 1.0f}, {6, 2, 2.0f}, {3, 4, 2.5f}, {8, 5, 3.0f}, {7, 9, 4.0f}});
}

TEST(TreeIndexTest, IndexesAHandCheckedTree) {
  Indexed t(SixLeafTree());
  ASSERT_TRUE(t.Build(8).ok());
  EXPECT_EQ(t.index.leaves(), 6u);
  EXPECT_EQ(t.index.root(), 10u);
  EXPECT_EQ(t.index.Parent(10), kNone);
  EXPECT_EQ(t.index.Parent(0), 6u);
  EXPECT_EQ(t.index.Parent(2), 7u);
  EXPECT_EQ(t.index.Parent(8), 9u);
  EXPECT_EQ(t.index.FirstChild(7), 6u);
  EXPECT_EQ(t.index.SecondChild(7), 2u);
  EXPECT_EQ(t.index.LeafVertex(3), 4u);
  EXPECT_EQ(t.index.LeafOf(4), 3u);
  EXPECT_EQ(t.index.LeafOf(0), kNone);   // not a leaf
  EXPECT_EQ(t.index.LeafOf(7), kNone);   // not a leaf
  EXPECT_EQ(t.index.LeafOf(99), kNone);  // beyond vertex_count
}

TEST(TreeIndexTest, PoolOfAHandCheckedTree) {
  Indexed t(SixLeafTree());
  ASSERT_TRUE(t.Build(8).ok());
  const std::vector<uint8_t> one_bin(8, 0);
  EXPECT_EQ(Pool(t.index, one_bin, 1, kNone, {5}, 10), (std::vector<uint32_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(Pool(t.index, one_bin, 1, 3, {5}, 10), (std::vector<uint32_t>{2, 4, 5, 6}));  // excluded
  EXPECT_EQ(Pool(t.index, one_bin, 1, kNone, {2}, 10), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(Pool(t.index, one_bin, 1, kNone, {5}, 3), (std::vector<uint32_t>{2, 3, 4}));  // capacity
  EXPECT_EQ(Pool(t.index, one_bin, 6, kNone, {3}, 10), (std::vector<uint32_t>{4, 5, 1}));
  EXPECT_EQ(Pool(t.index, one_bin, 3, kNone, {0}, 10), (std::vector<uint32_t>{}));
  EXPECT_EQ(Pool(t.index, one_bin, 7, kNone, {5}, 10), (std::vector<uint32_t>{}));  // u not in the tree
  // Two bins: 1, 3, 5 in bin 0; 2, 4, 6 in bin 1.
  std::vector<uint8_t> plan = {kAbsentBin, 0, 1, 0, 1, 0, 1, kAbsentBin};
  EXPECT_EQ(Pool(t.index, plan, 1, kNone, {1, 1}, 10), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(Pool(t.index, plan, 1, kNone, {2, 1}, 10), (std::vector<uint32_t>{2, 3, 5}));
  EXPECT_EQ(Pool(t.index, plan, 1, kNone, {0, 3}, 10), (std::vector<uint32_t>{2, 4, 6}));
  // Quotas beyond what a bin holds stop at the root.
  EXPECT_EQ(Pool(t.index, plan, 1, kNone, {9, 0}, 10), (std::vector<uint32_t>{3, 5}));
  // A bin >= bins (quotas.size()) or kAbsentBin never joins.
  plan[5] = 2;
  EXPECT_EQ(Pool(t.index, plan, 1, kNone, {9, 0}, 10), (std::vector<uint32_t>{3}));
  // An empty pool buffer: nothing, no overrun.
  EXPECT_EQ(Pool(t.index, one_bin, 1, kNone, {5}, 0), (std::vector<uint32_t>{}));
  // Single-leaf and empty trees.
  Indexed single(EncodeTree({4}, {}));
  ASSERT_TRUE(single.Build(8).ok());
  EXPECT_EQ(single.index.root(), 0u);
  EXPECT_EQ(Pool(single.index, one_bin, 4, kNone, {3}, 4), (std::vector<uint32_t>{}));
  Indexed empty(EncodeTree({}, {}));
  ASSERT_TRUE(empty.Build(8).ok());
  EXPECT_TRUE(empty.index.empty());
  EXPECT_EQ(Pool(empty.index, one_bin, 4, kNone, {3}, 4), (std::vector<uint32_t>{}));
}

TEST(TreeIndexTest, BuildRefusesWhatItCannotTrust) {
  const std::vector<uint32_t> leaves = {1, 2, 3, 4};
  auto build = [](std::vector<uint8_t> bytes, uint32_t n = 8) {
    Indexed t(std::move(bytes));
    const Status s = t.Build(n);
    if (!s.ok()) {
      EXPECT_TRUE(t.index.empty());
    }
    return s;
  };
  EXPECT_TRUE(build(EncodeTree(leaves, {{0, 1, 1}, {2, 3, 1}, {4, 5, 2}})).ok());
  // A node merged twice (TreeStream cannot see this).
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 1, 1}, {0, 2, 1}, {4, 5, 2}})), Status::DataLoss());
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 1, 1}, {4, 2, 1}, {4, 5, 2}})), Status::DataLoss());
  // A child that does not exist yet, or the node itself.
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 5, 1}, {2, 3, 1}, {4, 5, 2}})), Status::DataLoss());
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 4, 1}, {2, 3, 1}, {4, 5, 2}})), Status::DataLoss());
  // Same node twice in one merge.
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 0, 1}, {2, 3, 1}, {4, 5, 2}})), Status::DataLoss());
  // A vertex that is two leaves; a vertex id beyond vertex_count.
  EXPECT_EQ(build(EncodeTree({1, 2, 2, 4}, {{0, 1, 1}, {2, 3, 1}, {4, 5, 2}})), Status::DataLoss());
  EXPECT_EQ(build(EncodeTree(leaves, {{0, 1, 1}, {2, 3, 1}, {4, 5, 2}}), 4), Status::DataLoss());
  // Size not matching the leaf count; more leaves than vertices.
  std::vector<uint8_t> cut = EncodeTree(leaves, {{0, 1, 1}, {2, 3, 1}, {4, 5, 2}});
  cut.pop_back();
  EXPECT_EQ(build(cut), Status::DataLoss());
  EXPECT_EQ(build(EncodeTree({1, 2}, {{0, 1, 1}}), 1), Status::DataLoss());
  EXPECT_EQ(build({1, 2}), Status::InvalidArgument());
  // Memory too small.
  Indexed t(EncodeTree(leaves, {{0, 1, 1}, {2, 3, 1}, {4, 5, 2}}));
  std::vector<uint32_t> parent(6), leaf_of(8);
  EXPECT_EQ(t.index.Build(t.bytes, 8, parent, leaf_of), Status::ResourceExhausted());
  parent.resize(7);
  leaf_of.resize(7);
  EXPECT_EQ(t.index.Build(t.bytes, 8, parent, leaf_of), Status::ResourceExhausted());
}

// ---- Random trees against the brute-force reference -----------------------------------------

struct RandomTree {
  uint32_t n = 0;
  std::vector<uint32_t> leaves;  // leaf i -> vertex
  std::vector<TestMerge> merges;
  std::vector<uint8_t> plan;
  // Reference structure, built from the merges directly.
  std::vector<uint32_t> parent, first, second, depth, dfs_position;
};

RandomTree MakeRandomTree(std::mt19937_64& gen, uint32_t n, uint32_t bins) {
  RandomTree t;
  t.n = n;
  std::vector<uint32_t> vertices(n);
  for (uint32_t v = 0; v < n; ++v) vertices[v] = v;
  std::shuffle(vertices.begin(), vertices.end(), gen);
  const uint32_t m = n - static_cast<uint32_t>(gen() % (n / 5 + 1));  // some vertices not in the tree
  t.leaves.assign(vertices.begin(), vertices.begin() + m);
  std::vector<uint32_t> active(m);
  for (uint32_t i = 0; i < m; ++i) active[i] = i;
  for (uint32_t j = 0; j + 1 < m; ++j) {
    const size_t a = gen() % active.size();
    size_t b = gen() % (active.size() - 1);
    if (b >= a) ++b;
    t.merges.push_back({active[a], active[b], static_cast<float>(j)});
    const uint32_t hi = static_cast<uint32_t>(std::max(a, b)), lo = static_cast<uint32_t>(std::min(a, b));
    active.erase(active.begin() + hi);
    active.erase(active.begin() + lo);
    active.push_back(m + j);
  }
  t.plan.resize(n);
  for (uint32_t v = 0; v < n; ++v) t.plan[v] = gen() % 10 == 0 ? kAbsentBin : static_cast<uint8_t>(gen() % bins);
  // Reference structure.
  const uint32_t nodes = m == 0 ? 0 : 2 * m - 1;
  t.parent.assign(nodes, kNone);
  t.first.assign(nodes, kNone);
  t.second.assign(nodes, kNone);
  for (uint32_t j = 0; j + 1 < m; ++j) {
    t.first[m + j] = t.merges[j].a;
    t.second[m + j] = t.merges[j].b;
    t.parent[t.merges[j].a] = t.parent[t.merges[j].b] = m + j;
  }
  t.depth.assign(nodes, 0);
  t.dfs_position.assign(m, 0);
  if (nodes > 0) {
    // Recursive preorder, first child first.
    uint32_t next = 0;
    std::vector<std::pair<uint32_t, uint32_t>> pending = {{nodes - 1, 0}};
    while (!pending.empty()) {
      auto [node, d] = pending.back();
      pending.pop_back();
      t.depth[node] = d;
      if (node < m) {
        t.dfs_position[node] = next++;
      } else {
        pending.push_back({t.second[node], d + 1});
        pending.push_back({t.first[node], d + 1});
      }
    }
  }
  return t;
}

std::vector<uint32_t> ReferencePool(const RandomTree& t, uint32_t u, uint32_t exclude, const std::vector<uint32_t>& quotas,
                                    size_t capacity) {
  const uint32_t m = static_cast<uint32_t>(t.leaves.size());
  uint32_t u_leaf = kNone;
  for (uint32_t i = 0; i < m; ++i) {
    if (t.leaves[i] == u) u_leaf = i;
  }
  if (u_leaf == kNone) return {};
  std::vector<bool> u_ancestor(t.parent.size(), false);
  for (uint32_t x = u_leaf; x != kNone; x = t.parent[x]) u_ancestor[x] = true;
  struct Candidate {
    uint32_t lca_depth, position, vertex;
  };
  std::vector<Candidate> all;
  for (uint32_t i = 0; i < m; ++i) {
    if (i == u_leaf) continue;
    uint32_t x = i;
    while (!u_ancestor[x]) x = t.parent[x];
    all.push_back({t.depth[x], t.dfs_position[i], t.leaves[i]});
  }
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return a.lca_depth != b.lca_depth ? a.lca_depth > b.lca_depth : a.position < b.position;
  });
  std::vector<uint32_t> left = quotas;
  std::vector<uint32_t> pool;
  for (const Candidate& c : all) {
    if (pool.size() == capacity) break;
    if (c.vertex == exclude) continue;
    const uint8_t bin = t.plan[c.vertex];
    if (bin >= left.size() || left[bin] == 0) continue;
    --left[bin];
    pool.push_back(c.vertex);
  }
  return pool;
}

TEST(TreeIndexTest, RandomTreesMatchTheBruteForceReference) {
  std::mt19937_64 gen(20240607);
  size_t pools = 0, nonempty = 0, truncated = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const uint32_t n = 2 + static_cast<uint32_t>(gen() % 120);
    const uint32_t bins = 1 + static_cast<uint32_t>(gen() % 5);
    const RandomTree rt = MakeRandomTree(gen, n, bins);
    Indexed t(EncodeTree(rt.leaves, rt.merges));
    ASSERT_TRUE(t.Build(n).ok()) << trial;
    const uint32_t m = static_cast<uint32_t>(rt.leaves.size());
    // The index agrees with the reference structure.
    for (uint32_t node = 0; node < rt.parent.size(); ++node) {
      ASSERT_EQ(t.index.Parent(node), rt.parent[node]);
      if (node >= m) {
        ASSERT_EQ(t.index.FirstChild(node), rt.first[node]);
        ASSERT_EQ(t.index.SecondChild(node), rt.second[node]);
      }
    }
    for (uint32_t v = 0; v < n; ++v) {
      const auto it = std::find(rt.leaves.begin(), rt.leaves.end(), v);
      ASSERT_EQ(t.index.LeafOf(v), it == rt.leaves.end() ? kNone : static_cast<uint32_t>(it - rt.leaves.begin()));
    }
    std::vector<uint32_t> sizes(bins);
    CountLeavesPerBin(t.index, rt.plan, sizes);
    std::vector<uint32_t> want_sizes(bins, 0);
    for (uint32_t v : rt.leaves) {
      if (rt.plan[v] < bins) ++want_sizes[rt.plan[v]];
    }
    EXPECT_EQ(sizes, want_sizes);
    // Pools for several vertices, quotas, exclusions and capacities.
    for (int q = 0; q < 12; ++q) {
      const uint32_t u = static_cast<uint32_t>(gen() % n);
      const uint32_t exclude = gen() % 3 == 0 ? kNone : static_cast<uint32_t>(gen() % n);
      std::vector<uint32_t> quotas(bins);
      for (uint32_t& x : quotas) x = static_cast<uint32_t>(gen() % 6);
      const size_t capacity = gen() % 4 == 0 ? gen() % 4 : 64;
      const std::vector<uint32_t> want = ReferencePool(rt, u, exclude, quotas, capacity);
      EXPECT_EQ(Pool(t.index, rt.plan, u, exclude, quotas, capacity), want)
          << "trial " << trial << " u " << u << " exclude " << exclude;
      ++pools;
      nonempty += want.empty() ? 0 : 1;
      truncated += (want.size() == capacity && capacity < 64) ? 1 : 0;
    }
  }
  // The comparison covered real pools, including ones cut by capacity.
  EXPECT_GT(nonempty, pools / 2);
  EXPECT_GT(truncated, 10u);
}

TEST(TreeIndexTest, QuotasRoundClampAndIgnoreNoise) {
  std::vector<uint8_t> row;
  for (float v : {2.5f, -3.0f, std::numeric_limits<float>::quiet_NaN(), 1e30f, 0.49f, 7.0f,
                  std::numeric_limits<float>::infinity()}) {
    PutF32(row, v);
  }
  const std::vector<uint32_t> sizes = {10, 10, 10, 12, 10, 4, 9};
  std::vector<uint32_t> quotas(7, 99);
  PoolQuotas(row, sizes, quotas);
  EXPECT_EQ(quotas, (std::vector<uint32_t>{3, 0, 0, 12, 0, 4, 9}));
}

}  // namespace
}  // namespace nodefl::fedwalk
