// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeepWalk's walks: structure (edges, lengths, rounds), uniform neighbour
// choice and determinism.
#include "nodefl/server/fedwalk/deepwalk/deepwalk_walks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

using nodefl::dataset::Graph;

Graph FromEdges(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  Graph g;
  g.num_nodes = n;
  g.num_edges = edges.size();
  std::vector<std::vector<uint32_t>> adjacency(n);
  for (auto [u, v] : edges) {
    adjacency[u].push_back(v);
    adjacency[v].push_back(u);
  }
  g.offsets.push_back(0);
  for (auto& list : adjacency) {
    std::sort(list.begin(), list.end());
    g.neighbours.insert(g.neighbours.end(), list.begin(), list.end());
    g.offsets.push_back(g.neighbours.size());
  }
  return g;
}

// A hub (0) with five leaves, a path 6-7-8 and the isolated vertex 9.
Graph SmallGraph() { return FromEdges(10, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 2}, {6, 7}, {7, 8}}); }

bool IsEdge(const Graph& g, uint32_t u, uint32_t v) {
  const auto begin = g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[u]);
  const auto end = g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[u + 1]);
  return std::binary_search(begin, end, v);
}

TEST(DeepWalkWalksTest, WalksFollowEdgesWithTheRightShape) {
  const Graph g = SmallGraph();
  DeepWalkOptions o;
  o.walks_per_vertex = 7;
  o.walk_length = 12;
  o.threads = 2;
  std::string error;
  const auto corpus = GenerateDeepWalks(g, o, {}, &error);
  ASSERT_TRUE(corpus.has_value()) << error;
  ASSERT_EQ(corpus->num_walks(), 7u * 10);
  EXPECT_EQ(corpus->num_vertices(), 10u);
  for (uint32_t r = 0; r < 7; ++r) {
    std::vector<uint32_t> starts;
    for (uint32_t i = 0; i < 10; ++i) {
      const auto walk = corpus->Walk(r * 10 + i);
      ASSERT_FALSE(walk.empty());
      starts.push_back(walk[0]);
      EXPECT_EQ(walk.size(), walk[0] == 9 ? 1u : 12u) << "round " << r << " slot " << i;
      for (size_t k = 1; k < walk.size(); ++k) {
        ASSERT_TRUE(IsEdge(g, walk[k - 1], walk[k])) << walk[k - 1] << "-" << walk[k];
      }
    }
    std::sort(starts.begin(), starts.end());
    for (uint32_t v = 0; v < 10; ++v) EXPECT_EQ(starts[v], v) << "round " << r << " starts every vertex once";
  }
  EXPECT_EQ(corpus->num_tokens(), 7u * (9 * 12 + 1));
}

TEST(DeepWalkWalksTest, RoundOrdersAreShuffled) {
  const Graph g = SmallGraph();
  DeepWalkOptions o;
  o.walks_per_vertex = 20;
  o.walk_length = 2;
  const auto corpus = GenerateDeepWalks(g, o);
  ASSERT_TRUE(corpus.has_value());
  uint32_t identity_rounds = 0, distinct_first = 0;
  std::vector<bool> seen_first(10, false);
  for (uint32_t r = 0; r < 20; ++r) {
    bool identity = true;
    for (uint32_t i = 0; i < 10; ++i) identity = identity && corpus->Walk(r * 10 + i)[0] == i;
    identity_rounds += identity;
    const uint32_t first = corpus->Walk(r * 10)[0];
    distinct_first += !seen_first[first];
    seen_first[first] = true;
  }
  EXPECT_EQ(identity_rounds, 0u);
  EXPECT_GE(distinct_first, 4u);
}

// From the hub, each of its five neighbours is the next step equally often.
TEST(DeepWalkWalksTest, NextStepIsUniformOverNeighbours) {
  const Graph g = SmallGraph();
  DeepWalkOptions o;
  o.walks_per_vertex = 400;
  o.walk_length = 30;
  o.seed = 9;
  const auto corpus = GenerateDeepWalks(g, o);
  ASSERT_TRUE(corpus.has_value());
  std::vector<double> observed(5, 0);
  for (size_t w = 0; w < corpus->num_walks(); ++w) {
    const auto walk = corpus->Walk(w);
    for (size_t k = 1; k < walk.size(); ++k) {
      if (walk[k - 1] == 0) ++observed[walk[k] - 1];
    }
  }
  double total = 0;
  for (double x : observed) total += x;
  ASSERT_GT(total, 1000);
  const std::vector<double> expected(5, total / 5);
  EXPECT_LT(testing::ChiSquareStatistic(observed, expected), testing::ChiSquareCritical(4));
}

TEST(DeepWalkWalksTest, SameSeedSameWalksForAnyThreadCount) {
  const Graph g = nodefl::dataset::GeneratePlantedPartition(3, 30, 0.3, 0.02, 4);
  DeepWalkOptions o;
  o.walks_per_vertex = 5;
  o.walk_length = 15;
  o.seed = 123;
  o.threads = 1;
  const auto one = GenerateDeepWalks(g, o);
  o.threads = 3;
  const auto three = GenerateDeepWalks(g, o);
  const auto three_again = GenerateDeepWalks(g, o);
  o.seed = 124;
  const auto other = GenerateDeepWalks(g, o);
  ASSERT_TRUE(one && three && three_again && other);
  EXPECT_EQ(one->tokens(), three->tokens());
  EXPECT_EQ(one->offsets(), three->offsets());
  EXPECT_EQ(three->tokens(), three_again->tokens());
  EXPECT_NE(one->tokens(), other->tokens());
}

TEST(DeepWalkWalksTest, ProgressAndBadOptions) {
  const Graph g = SmallGraph();
  DeepWalkOptions o;
  o.walks_per_vertex = 3;
  o.walk_length = 4;
  uint64_t last = 0, total_seen = 0;
  ASSERT_TRUE(GenerateDeepWalks(g, o, [&](uint64_t done, uint64_t total) {
                last = done;
                total_seen = total;
              }).has_value());
  EXPECT_EQ(last, 30u);
  EXPECT_EQ(total_seen, 30u);
  std::string error;
  o.walk_length = 0;
  EXPECT_FALSE(GenerateDeepWalks(g, o, {}, &error).has_value());
  EXPECT_FALSE(error.empty());
  o.walk_length = 4;
  o.walks_per_vertex = 0;
  EXPECT_FALSE(GenerateDeepWalks(g, o, {}, &error).has_value());
}

}  // namespace
}  // namespace nodefl::server::fedwalk
