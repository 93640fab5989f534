// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server-side Lumos training: Adam against its definition, the seeded
// splits (exact sizes, disjoint, reproducible, seed-dependent), and the
// centralized baseline learning a generated graph (planted communities with
// noisy community features) well above chance, plus its clear refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "nodefl/server/lumos/training/adam.h"
#include "nodefl/server/lumos/training/central.h"
#include "nodefl/server/lumos/training/splits.h"

namespace nodefl::server::lumos {
namespace {

TEST(LumosAdamTest, FirstStepIsTheLearningRateAndAQuadraticConverges) {
  Adam adam(2, AdamOptions{});
  std::vector<float> p = {1.0f, -2.0f};
  // Bias-corrected first step: exactly lr * sign(g) (up to epsilon).
  ASSERT_TRUE(adam.Step(p, std::vector<float>{3.0f, -0.5f}));
  EXPECT_NEAR(p[0], 1.0f - 0.01f, 1e-6);
  EXPECT_NEAR(p[1], -2.0f + 0.01f, 1e-6);
  // Minimise (x - 3)^2 + (y + 1)^2.
  AdamOptions o;
  o.learning_rate = 0.05;
  Adam a(2, o);
  std::vector<float> q = {0.0f, 0.0f};
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(a.Step(q, std::vector<float>{2 * (q[0] - 3), 2 * (q[1] + 1)}));
  }
  EXPECT_NEAR(q[0], 3.0f, 1e-2);
  EXPECT_NEAR(q[1], -1.0f, 1e-2);
  // A non-finite gradient changes nothing.
  const std::vector<float> before = q;
  EXPECT_FALSE(a.Step(q, std::vector<float>{NAN, 0.0f}));
  EXPECT_EQ(q, before);
  EXPECT_FALSE(a.Step(q, std::vector<float>{1.0f}));
}

TEST(LumosSplitTest, NodeAndEdgeSplitsAreExactDisjointAndReproducible) {
  const std::vector<Split> s = SplitNodes(1001, 7);
  size_t count[3] = {0, 0, 0};
  for (Split x : s) ++count[static_cast<int>(x)];
  EXPECT_EQ(count[0], 500u);
  EXPECT_EQ(count[1], 250u);
  EXPECT_EQ(count[2], 251u);
  EXPECT_EQ(SplitNodes(1001, 7), s);
  EXPECT_NE(SplitNodes(1001, 8), s);
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i = 0; i < 200; ++i) edges.push_back({i, i + 1});
  const EdgeSplit e = SplitEdges(edges, 3);
  EXPECT_EQ(e.train.size(), 160u);
  EXPECT_EQ(e.validation.size(), 10u);
  EXPECT_EQ(e.test.size(), 30u);
  std::set<std::pair<uint32_t, uint32_t>> all(e.train.begin(), e.train.end());
  all.insert(e.validation.begin(), e.validation.end());
  all.insert(e.test.begin(), e.test.end());
  EXPECT_EQ(all.size(), 200u);
  EXPECT_EQ(SplitEdges(edges, 3).test, e.test);
}

// Four planted communities; each node has 40 binary features, a few of
// them tied to its community and the rest random.
dataset::Graph Planted(uint64_t seed) {
  dataset::Graph g = dataset::GeneratePlantedPartition(4, 60, 0.15, 0.01, seed);
  std::mt19937_64 rng(seed + 1);
  std::bernoulli_distribution noise(0.1), signal(0.5);
  g.num_feature_dims = 40;
  g.feature_offsets.assign(1, 0);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    const uint32_t c = g.labels[g.label_offsets[v]];
    for (uint32_t f = 0; f < 40; ++f) {
      const bool own = f / 10 == c;
      if (own ? signal(rng) : noise(rng)) g.features.push_back(f);
    }
    g.feature_offsets.push_back(g.features.size());
  }
  g.name = "planted";
  return g;
}

TEST(LumosCentralTest, GcnAndGatLearnPlantedCommunities) {
  const dataset::Graph g = Planted(5);
  const std::vector<Split> split = SplitNodes(g.num_nodes, 1);
  for (gnn::LayerKind kind : {gnn::LayerKind::kGcn, gnn::LayerKind::kGat}) {
    CentralOptions o;
    o.shape.layer = kind;
    o.epochs = 60;
    CentralResult r = TrainCentralNodeClassifier(g, split, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.epochs.size(), 60u);
    EXPECT_GT(r.test_at_best, 0.85) << (kind == gnn::LayerKind::kGat ? "gat" : "gcn");  // chance: 0.25
    EXPECT_LT(r.epochs.back().loss, r.epochs.front().loss);
  }
}

TEST(LumosCentralTest, DatasetsItCannotTrainOnAreRefusedWithAReason) {
  dataset::Graph g = Planted(6);
  const std::vector<Split> split = SplitNodes(g.num_nodes, 1);
  CentralOptions o;
  o.epochs = 1;
  dataset::Graph no_features = g;
  no_features.num_feature_dims = 0;
  EXPECT_NE(TrainCentralNodeClassifier(no_features, split, o).error.find("no features"), std::string::npos);
  dataset::Graph multi = g;
  multi.labels.insert(multi.labels.begin() + static_cast<std::ptrdiff_t>(multi.label_offsets[1]), 2);
  for (size_t v = 1; v < multi.label_offsets.size(); ++v) ++multi.label_offsets[v];
  EXPECT_NE(TrainCentralNodeClassifier(multi, split, o).error.find("several labels"), std::string::npos);
  EXPECT_NE(TrainCentralNodeClassifier(g, std::vector<Split>(3), o).error.find("split"), std::string::npos);
}

}  // namespace
}  // namespace nodefl::server::lumos
