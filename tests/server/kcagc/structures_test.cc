// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's structures in kCAGC: the intersections of participants'
// clusters (Protocol 3 lines 4-10), the tree arrangement (Sec. 3.4: L - 1
// internal nodes for any L), the simulated secure sum (bit-identical to
// encode, add mod 2^32, decode) and its counters, and the assignment from
// summed distances.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/assignment.h"
#include "nodefl/server/kcagc/intersections.h"
#include "nodefl/server/kcagc/secure_sums.h"
#include "nodefl/server/kcagc/tree.h"

namespace nodefl::server::kcagc {
namespace {

using nodefl::kcagc::Assignment;

TEST(IntersectionsTest, GroupsNodesByTheirTupleOfClusters) {
  const std::vector<Assignment> parts = {{0, 0, 1, 1, 2, 0}, {1, 1, 1, 0, 0, 0}, {0, 0, 0, 0, 0, 1}};
  const nodefl::kcagc::Intersections g = Intersect(parts).value();
  // Tuples: (0,1,0) {0,1}; (1,1,0) {2}; (1,0,0) {3}; (2,0,0) {4}; (0,0,1) {5}.
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g.parts, 3u);
  EXPECT_EQ(g.offsets, (std::vector<uint32_t>{0, 2, 3, 4, 5, 6}));
  EXPECT_EQ(g.nodes, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(g.key(0, 0), 0);
  EXPECT_EQ(g.key(0, 1), 1);
  EXPECT_EQ(g.key(4, 2), 1);
  EXPECT_EQ(SpreadToNodes(g, Assignment{7, 8, 9, 10, 11}, 6), (Assignment{7, 7, 8, 9, 10, 11}));
  // Only non-empty intersections: 3 x 2 x 2 = 12 possible, 5 exist.
  EXPECT_FALSE(Intersect(std::vector<Assignment>{{0, -1}}).ok());
  EXPECT_FALSE(Intersect(std::vector<Assignment>{{0, 1}, {0}}).ok());
  EXPECT_FALSE(Intersect(std::vector<Assignment>{}).ok());
}

TEST(IntersectionsTest, OneAssignmentGivesItsClustersInOrderOfTheirFirstNode) {
  const nodefl::kcagc::Intersections g = Intersect(std::vector<Assignment>{{3, 1, 3, 0}}).value();
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.key(0, 0), 3);
  EXPECT_EQ(g.key(1, 0), 1);
  EXPECT_EQ(g.key(2, 0), 0);
  EXPECT_EQ(g.group_size(0), 2u);
}

TEST(TreeTest, HasLMinusOneInternalNodesForAnyL) {
  for (uint32_t leaves = 1; leaves <= 17; ++leaves) {
    const Tree t = BuildTree(leaves).value();
    EXPECT_EQ(t.internal_count(), leaves - 1) << leaves;
    EXPECT_EQ(t.nodes.size(), 2u * leaves - 1);
    uint32_t depth = 0;
    for (const TreeNode& n : t.nodes) depth = std::max(depth, n.depth);
    EXPECT_EQ(depth, static_cast<uint32_t>(std::ceil(std::log2(leaves)))) << leaves;
    // Children come before parents, and every internal node covers exactly
    // its two children's participants.
    std::set<uint32_t> seen;
    for (const uint32_t i : t.internal_order) {
      const TreeNode& n = t.nodes[i];
      const auto& l = t.nodes[static_cast<size_t>(n.left)];
      const auto& r = t.nodes[static_cast<size_t>(n.right)];
      EXPECT_TRUE(l.leaf() || seen.count(static_cast<uint32_t>(n.left)));
      EXPECT_TRUE(r.leaf() || seen.count(static_cast<uint32_t>(n.right)));
      EXPECT_EQ(l.first, n.first);
      EXPECT_EQ(r.first, l.first + l.count);
      EXPECT_EQ(n.count, l.count + r.count);
      seen.insert(i);
    }
    if (leaves > 1) {
      EXPECT_EQ(t.internal_order.back(), t.root);
    }
    EXPECT_EQ(t.nodes[t.root].count, leaves);
  }
  const Tree five = BuildTree(5).value();
  EXPECT_EQ(five.internal_count(), 4u);
  EXPECT_FALSE(BuildTree(0).ok());
}

TEST(AggregatorTest, SimulatedSumIsEncodeAddDecode) {
  SimulatedSecureAggregator agg;
  const nodefl::secagg::FixedPoint code{8.0f, 1024.0f};
  const std::vector<std::vector<float>> inputs = {{1.5f, -2.25f, 7.9999f}, {0.0004f, 3.0f, 7.9f}, {-1.0f, 0.1f, -8.0f}};
  const std::vector<float> sum = agg.Sum(inputs, code).value();
  // The reference: encode, add mod 2^32, decode, with the SDK's own code.
  std::vector<uint32_t> total(3, 0), q(3);
  for (const auto& v : inputs) {
    ASSERT_TRUE(nodefl::secagg::EncodeFixedPoint(code, v, q).ok());
    for (int i = 0; i < 3; ++i) total[i] += q[i];
  }
  std::vector<float> ref(3);
  ASSERT_TRUE(nodefl::secagg::DecodeFixedPointSum(code, total, ref).ok());
  EXPECT_EQ(sum, ref);
  EXPECT_NEAR(sum[0], 0.5004f, 1.0 / 1024);
  EXPECT_EQ(agg.counters().rounds, 1u);
  EXPECT_EQ(agg.counters().scalars, 3u);
  EXPECT_EQ(agg.counters().uploaded_bytes, 3u * 3u * 4u);
  EXPECT_EQ(agg.counters().clipped, 0u);
  // A value past the clip is clipped and counted.
  ASSERT_TRUE(agg.Sum(std::vector<std::vector<float>>{{9.0f}}, code).ok());
  EXPECT_EQ(agg.counters().clipped, 1u);
  // Refusals, which count nothing.
  EXPECT_EQ(agg.Sum(std::vector<std::vector<float>>{}, code).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(agg.Sum(std::vector<std::vector<float>>{{1.0f}, {1.0f, 2.0f}}, code).status().code(),
            StatusCode::kInvalidArgument);
  const nodefl::secagg::FixedPoint tight{1.0f, 1073741824.0f};  // clip scale = 2^30: one summand at most
  EXPECT_EQ(agg.Sum(std::vector<std::vector<float>>{{0.f}, {0.f}, {0.f}}, tight).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(agg.counters().rounds, 2u);
}

TEST(AssignmentTest, FromSummedDistances) {
  const std::vector<float> sums = {1, 10, 5, 6, 9, 1};
  const AssignmentStep first = AssignFromSums(sums, 3, 2, AssignRule::kOneNinth).value();
  EXPECT_EQ(first.assignment, (Assignment{0, nodefl::kcagc::kUnassigned, 1}));
  EXPECT_EQ(first.unassigned, 1u);
  EXPECT_EQ(first.changed, 3u);
  const AssignmentStep next = AssignFromSums(sums, 3, 2, AssignRule::kNearest, &first.assignment).value();
  EXPECT_EQ(next.assignment, (Assignment{0, 0, 1}));
  EXPECT_EQ(next.changed, 1u);
  EXPECT_FALSE(AssignFromSums(sums, 4, 2, AssignRule::kNearest).ok());
}

TEST(SecureSumsTest, PaperFormulas) {
  EXPECT_DOUBLE_EQ(PaperBasicSecureSums(2708, 7, 10), 11.0 * 2708 * 7);
  EXPECT_DOUBLE_EQ(PaperKcagcSecureSums(7, 7, 2, 10), 11.0 * 7 * 49);
  EXPECT_DOUBLE_EQ(PaperTreeSecureSums(14, 8, 10), 11.0 * 8 * 14 * 14 * 14);
  EXPECT_EQ(StageSecureSums(100, 7, 3), 4u * 100 * 7);
  EXPECT_EQ(StageRounds(7, 3, true), 10u);
  EXPECT_EQ(StageRounds(7, 3, false), 4u);
}

}  // namespace
}  // namespace nodefl::server::kcagc
