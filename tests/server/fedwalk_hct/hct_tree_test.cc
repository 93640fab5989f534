// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// HctTree queries against references computed from the merge list alone
// (member sets of every node), and FromMerges' validation.
#include "nodefl/server/fedwalk/hct/hct_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hct_test_support.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {
namespace {

constexpr uint32_t kSizes[] = {1, 2, 3, 10, 57, 200};

HctTree RandomTree(uint64_t seed, uint32_t m, std::vector<Merge>* merges_out = nullptr) {
  Drbg rng;
  test::Seed(rng, seed, m);
  std::vector<Merge> merges = test::RandomMerges(rng, m);
  std::optional<HctTree> t = HctTree::FromMerges(merges, test::RandomLeafVertices(rng, m, 2 * m + 3));
  EXPECT_TRUE(t.has_value());
  if (merges_out != nullptr) *merges_out = merges;
  return t.value_or(HctTree{});
}

// |leaves| of the smallest node holding both x and y: the LCA by definition.
uint32_t LcaLeavesByMembers(const std::vector<std::vector<uint32_t>>& members, uint32_t x, uint32_t y) {
  size_t best = std::numeric_limits<size_t>::max();
  for (const auto& node : members) {
    if (std::binary_search(node.begin(), node.end(), x) && std::binary_search(node.begin(), node.end(), y)) {
      best = std::min(best, node.size());
    }
  }
  return static_cast<uint32_t>(best);
}

TEST(HctTreeTest, StructureMatchesMerges) {
  for (uint32_t m : kSizes) {
    std::vector<Merge> merges;
    const HctTree t = RandomTree(1, m, &merges);
    const auto members = test::NodeMembers(merges, m);
    ASSERT_EQ(t.leaf_count(), m);
    ASSERT_EQ(t.node_count(), 2 * m - 1);
    EXPECT_EQ(t.parent(t.root()), HctTree::kNoParent);
    for (uint32_t node = 0; node < t.node_count(); ++node) {
      EXPECT_EQ(t.size(node), members[node].size());
      // The node's depth-first range holds exactly its members.
      std::vector<uint32_t> range(t.dfs_leaves().begin() + t.dfs_begin(node),
                                  t.dfs_leaves().begin() + t.dfs_begin(node) + t.size(node));
      std::sort(range.begin(), range.end());
      EXPECT_EQ(range, members[node]) << "node " << node;
    }
    for (size_t i = 0; i < merges.size(); ++i) {
      EXPECT_EQ(t.parent(merges[i].a), m + i);
      EXPECT_EQ(t.parent(merges[i].b), m + i);
    }
  }
}

TEST(HctTreeTest, LcaCountsMatchTheDefinition) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    for (uint32_t m : kSizes) {
      std::vector<Merge> merges;
      const HctTree t = RandomTree(seed, m, &merges);
      const auto members = test::NodeMembers(merges, m);
      std::vector<uint32_t> counts(m);
      for (uint32_t leaf = 0; leaf < m; ++leaf) {
        std::fill(counts.begin(), counts.end(), 0u);
        t.LcaLeafCountsFrom(leaf, counts);
        for (uint32_t x = 0; x < m; ++x) {
          const uint32_t want = LcaLeavesByMembers(members, leaf, x);
          ASSERT_EQ(counts[x], want) << "m " << m << " leaf " << leaf << " x " << x;
          ASSERT_EQ(t.LcaLeafCount(leaf, x), want) << "m " << m << " leaf " << leaf << " x " << x;
        }
      }
    }
  }
}

TEST(HctTreeTest, LcaCountsOnAHandBuiltTree) {
  // ((0, 1), (2, (3, 4))): leaves 0..4, nodes 5 = {3,4}, 6 = {0,1},
  // 7 = {2,3,4}, 8 = root.
  const std::vector<Merge> merges = {{3, 4, 1, 2}, {0, 1, 2, 2}, {2, 5, 3, 3}, {6, 7, 4, 5}};
  const HctTree t = HctTree::FromMerges(merges, {10, 11, 12, 13, 14}).value();
  std::vector<uint32_t> counts(5);
  t.LcaLeafCountsFrom(3, counts);
  EXPECT_EQ(counts, (std::vector<uint32_t>{5, 5, 3, 1, 2}));
  t.LcaLeafCountsFrom(0, counts);
  EXPECT_EQ(counts, (std::vector<uint32_t>{1, 2, 5, 5, 5}));
  EXPECT_EQ(t.NearestLeaves(4, 5), (std::vector<uint32_t>{4, 3, 2, 0, 1}));
  EXPECT_EQ(t.NearestLeaves(1, 3), (std::vector<uint32_t>{1, 0, 2}));
}

TEST(HctTreeTest, NearestLeavesFollowTreeDistance) {
  for (uint32_t m : kSizes) {
    const HctTree t = RandomTree(4, m);
    for (uint32_t leaf = 0; leaf < m; ++leaf) {
      // Reference: every leaf sorted by the size of its LCA with `leaf`
      // (ancestor subtrees nest, so a bigger LCA is a farther ancestor),
      // ties by depth-first position.
      std::vector<uint32_t> all(m);
      for (uint32_t x = 0; x < m; ++x) all[x] = x;
      std::sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) {
        const uint32_t la = t.LcaLeafCount(leaf, a);
        const uint32_t lb = t.LcaLeafCount(leaf, b);
        return la != lb ? la < lb : t.dfs_begin(a) < t.dfs_begin(b);
      });
      for (uint32_t count : {0u, 1u, 2u, m / 2, m, m + 5}) {
        const std::vector<uint32_t> want(all.begin(), all.begin() + std::min(count, m));
        ASSERT_EQ(t.NearestLeaves(leaf, count), want) << "m " << m << " leaf " << leaf << " count " << count;
      }
    }
  }
}

TEST(HctTreeTest, EmptyAndSingleLeaf) {
  const HctTree empty = HctTree::FromMerges({}, {}).value();
  EXPECT_EQ(empty.leaf_count(), 0u);
  EXPECT_EQ(empty.node_count(), 0u);
  const HctTree one = HctTree::FromMerges({}, {42}).value();
  EXPECT_EQ(one.root(), 0u);
  std::vector<uint32_t> counts(1);
  one.LcaLeafCountsFrom(0, counts);
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(one.NearestLeaves(0, 3), std::vector<uint32_t>{0});
}

TEST(HctTreeTest, FromMergesRejectsInvalidTrees) {
  const std::vector<uint32_t> leaves = {0, 1, 2, 3};
  const std::vector<Merge> good = {{0, 1, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 4}};
  ASSERT_TRUE(HctTree::FromMerges(good, leaves).has_value());
  const auto rejects = [&](std::vector<Merge> merges, std::vector<uint32_t> ids) {
    return !HctTree::FromMerges(merges, ids).has_value();
  };
  EXPECT_TRUE(rejects({good[0], good[1]}, leaves));                            // too few merges
  EXPECT_TRUE(rejects({{0, 1, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 4}, {4, 5, 3, 4}}, leaves));  // too many
  EXPECT_TRUE(rejects({{1, 0, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 4}}, leaves));    // a > b
  EXPECT_TRUE(rejects({{0, 0, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 4}}, leaves));    // a == b
  EXPECT_TRUE(rejects({{0, 4, 1, 2}, {2, 3, 2, 2}, {1, 5, 3, 4}}, leaves));    // refers to itself
  EXPECT_TRUE(rejects({{0, 5, 1, 2}, {2, 3, 2, 2}, {1, 4, 3, 4}}, leaves));    // refers ahead
  EXPECT_TRUE(rejects({{0, 1, 1, 2}, {1, 2, 2, 3}, {3, 5, 3, 4}}, leaves));    // 1 used twice
  EXPECT_TRUE(rejects({{0, 1, 2, 2}, {2, 3, 1, 2}, {4, 5, 3, 4}}, leaves));    // height drops
  EXPECT_TRUE(rejects({{0, 1, 1, 2}, {2, 3, NAN, 2}, {4, 5, 3, 4}}, leaves));  // NaN height
  EXPECT_TRUE(rejects({{0, 1, 1, 2}, {2, 3, 2, 2}, {4, 5, INFINITY, 4}}, leaves));
  EXPECT_TRUE(rejects({{0, 1, 1, 2}, {2, 3, 2, 2}, {4, 5, 3, 3}}, leaves));    // wrong size
  EXPECT_TRUE(rejects(good, {0, 1, 2, 1}));                                    // vertex twice
  EXPECT_TRUE(rejects(good, {0, 1, 2, nodefl::fedwalk::kAbsentVertex}));
  EXPECT_TRUE(rejects({}, {0, 1}));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
