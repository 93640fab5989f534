// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The in-process FedWalk walk simulation (walk_simulation.h) on karate and
// on a generated graph: every walk accounted for; with the predictor off
// and the exact encoder every consecutive pair of entries is a true edge
// (checked on the corpus against the graph, not with the simulation's own
// classes); the encoder's substitutions against what the codebook implies;
// messages per walk against Theorem 4.2's recurrence; the oracle
// predictor; the same seed giving the same corpus whatever the threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/sim/hct_simulation.h"
#include "nodefl/server/fedwalk/sim/walk_simulation.h"

namespace nodefl::server::fedwalk {
namespace {

namespace fw = nodefl::fedwalk;
using Graph = std::vector<std::vector<uint32_t>>;

Graph Karate() {
  const auto loaded = dataset::LoadGraph(std::filesystem::path(NODEFL_DATASETS_DIR) / "karate");
  EXPECT_TRUE(loaded.ok) << loaded.error;
  const dataset::Graph& g = loaded.graph;
  Graph n(g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    n[v].assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
  }
  return n;
}

// The circulant graph C_n(1, 2, 3) (every vertex joined to the three next
// and previous ones on a ring: degree 6, no two vertices with the same
// neighbours), plus one isolated vertex with id n.
Graph CirculantWithIsolatedVertex(uint32_t n) {
  Graph g(n + 1);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint32_t d : {1u, 2u, 3u}) {
      g[v].push_back((v + d) % n);
      g[v].push_back((v + n - d) % n);
    }
    std::sort(g[v].begin(), g[v].end());
  }
  return g;
}

bool Adjacent(const Graph& g, uint32_t a, uint32_t b) { return std::binary_search(g[a].begin(), g[a].end(), b); }

WalkSimulationOptions Small(uint32_t gamma, double p) {
  WalkSimulationOptions o;
  o.walks_per_vertex = gamma;
  o.p = p;
  o.threads = 2;
  return o;
}

WalkSimulationResult Simulate(const Graph& g, const WalkSimulationOptions& o) {
  WalkSimulationResult r = SimulateWalks(g, o);
  EXPECT_TRUE(r.error.empty()) << r.error;
  return r;
}

// Every slot ends once; every entry is one encoding; every forward is one
// message; the corpus holds the walks with entries, in full.
void ExpectAccounted(const Graph& g, const WalkSimulationOptions& o, const WalkSimulationResult& r) {
  const WalkSimulationStats& s = r.stats;
  EXPECT_EQ(s.walks, uint64_t{o.walks_per_vertex} * g.size());
  EXPECT_EQ(s.completed + s.dead_ends + s.dropped, s.walks);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.tokens, r.corpus.num_tokens());
  EXPECT_EQ(s.neighbour_encodings + s.self_encodings, s.tokens);
  EXPECT_EQ(s.self_encodings, s.predicted_hops);  // every jump's device owes itself one entry
  EXPECT_EQ(s.consecutive.total(), s.tokens - r.corpus.num_walks());
  uint64_t full = 0;
  for (size_t i = 0; i < r.corpus.num_walks(); ++i) {
    ASSERT_GE(r.corpus.Walk(i).size(), 1u);
    ASSERT_LE(r.corpus.Walk(i).size(), o.walk_length);
    full += r.corpus.Walk(i).size() == o.walk_length ? 1 : 0;
  }
  EXPECT_EQ(full, s.completed);
}

TEST(WalkSimulationTest, KarateAccountsForEveryWalk) {
  const Graph g = Karate();
  const WalkSimulationOptions o = Small(20, 0.2);
  const WalkSimulationResult r = Simulate(g, o);
  ExpectAccounted(g, o, r);
  EXPECT_EQ(r.stats.completed, r.stats.walks);  // karate has no isolated vertex
  EXPECT_EQ(r.corpus.num_walks(), r.stats.walks);
  EXPECT_GT(r.stats.predicted_hops, 0u);
  EXPECT_EQ(r.stats.rows_not_kept, 0u);
  EXPECT_EQ(r.stats.bins, 3u);  // floor(ln 34)
}

TEST(WalkSimulationTest, IsolatedVertexEndsWalksAsDeadEnds) {
  const Graph g = CirculantWithIsolatedVertex(40);
  const WalkSimulationOptions o = Small(10, 0.2);
  const WalkSimulationResult r = Simulate(g, o);
  ExpectAccounted(g, o, r);
  // The isolated vertex's own walks end at once with no entry (not in the
  // corpus); a jump can land on it too, ending a walk part-way.
  EXPECT_GE(r.stats.dead_ends, o.walks_per_vertex);
  EXPECT_EQ(r.corpus.num_walks(), r.stats.walks - o.walks_per_vertex);
  EXPECT_EQ(r.stats.devices_without_walk_neighbours, 1u);
}

void ExpectOnlyEdges(const Graph& g) {
  WalkSimulationOptions o = Small(20, 0.0);
  o.exact_encoder = true;
  const WalkSimulationResult r = Simulate(g, o);
  ExpectAccounted(g, o, r);
  uint64_t pairs = 0, edges = 0;
  for (size_t i = 0; i < r.corpus.num_walks(); ++i) {
    const auto walk = r.corpus.Walk(i);
    for (size_t j = 1; j < walk.size(); ++j) {
      ++pairs;
      edges += Adjacent(g, walk[j - 1], walk[j]) ? 1 : 0;
    }
  }
  EXPECT_GT(pairs, 0u);
  EXPECT_EQ(edges, pairs);
  EXPECT_EQ(r.stats.consecutive.edge, pairs);
  EXPECT_EQ(r.stats.predicted_hops, 0u);
  EXPECT_EQ(r.stats.neighbour_substitutions, 0u);
  // p = 0: the recurrence is exact, one message per entry after the first.
  EXPECT_EQ(r.stats.messages_mean, o.walk_length - 1.0);
}

TEST(WalkSimulationTest, WithoutPredictorAndEncoderEveryPairIsAnEdge) {
  ExpectOnlyEdges(Karate());
  ExpectOnlyEdges(CirculantWithIsolatedVertex(40));
}

TEST(WalkSimulationTest, WithTheExactEncoderOnlyJumpsLeaveTheEdges) {
  // Entries are then the devices themselves: a neighbour hop adds an edge,
  // a jump adds the pair (skipped neighbour u, landing vertex u').
  const Graph g = Karate();
  WalkSimulationOptions o = Small(20, 0.2);
  o.exact_encoder = true;
  o.predictor = fw::JumpPredictor::kTree;
  const WalkSimulationResult r = Simulate(g, o);
  const WalkSimulationStats& s = r.stats;
  EXPECT_EQ(s.neighbour_substitutions + s.self_substitutions, 0u);
  EXPECT_EQ(s.consecutive.same, 0u);
  EXPECT_EQ(s.consecutive.two_hop, s.jump_vs_skipped.two_hop);
  EXPECT_EQ(s.consecutive.farther, s.jump_vs_skipped.farther);
  EXPECT_EQ(s.consecutive.edge, s.consecutive.total() - s.predicted_hops + s.jump_vs_skipped.edge);
  EXPECT_GT(s.jump_vs_skipped.farther + s.jump_vs_skipped.two_hop, 0u);  // the tree's guesses miss
}

TEST(WalkSimulationTest, OraclePredictorLandsOnTrueNeighbours) {
  const Graph g = Karate();
  WalkSimulationOptions o = Small(20, 0.2);
  o.exact_encoder = true;
  o.predictor = fw::JumpPredictor::kTree;
  o.oracle_predictor = true;
  const WalkSimulationResult r = Simulate(g, o);
  EXPECT_GT(r.stats.predicted_hops, 0u);
  EXPECT_EQ(r.stats.jump_vs_skipped.edge, r.stats.predicted_hops);
  // Entries are then a true random walk that skipped some devices.
  EXPECT_EQ(r.stats.consecutive.edge, r.stats.consecutive.total());
}

TEST(WalkSimulationTest, NeighbourPredictorJumpsAlongEdges) {
  const Graph g = Karate();
  WalkSimulationOptions o = Small(20, 0.2);
  o.exact_encoder = true;
  o.predictor = fw::JumpPredictor::kNeighbours;
  const WalkSimulationResult r = Simulate(g, o);
  EXPECT_GT(r.stats.predicted_hops, 0u);
  // Every jump goes to a neighbour of the device that jumped, never back
  // to the skipped u; karate's triangles make many of them true 2-hop
  // steps, and the rest are two hops from u through the jumping device.
  EXPECT_EQ(r.stats.jump_vs_previous.edge, r.stats.predicted_hops);
  EXPECT_EQ(r.stats.jump_vs_skipped.same, 0u);
  EXPECT_GT(r.stats.jump_vs_skipped.edge, r.stats.predicted_hops / 4);
  EXPECT_EQ(r.stats.jump_vs_skipped.edge + r.stats.jump_vs_skipped.two_hop, r.stats.predicted_hops);
}

// Substitutions only where the codebook allows them, as often as it says:
// with p = 0 the devices holding a walk are a simple random walk from a
// uniform start, so the expected count of Enc(u) != u is exact to compute
// from the codebook the simulation's HCT job publishes (rebuilt here with
// the same seed and options).
TEST(WalkSimulationTest, SubstitutionsMatchTheCodebook) {
  const Graph g = Karate();
  const auto n = static_cast<uint32_t>(g.size());
  WalkSimulationOptions o = Small(80, 0.0);
  const WalkSimulationResult r = Simulate(g, o);

  fw::HctParameters params;
  params.mode = PrivacyMode::kPaper;
  const SimulatedJob job = SimulateHctUploads(g, params, o.seed);
  ASSERT_TRUE(job.error.empty()) << job.error;
  HctPipelineOptions pipeline;
  pipeline.codebook.k = o.codebook_k;
  pipeline.codebook.epsilon = o.epsilon_walk;
  const HctPipelineResult hct = RunHctPipeline(job.transcript, job.leaves, pipeline);
  ASSERT_TRUE(hct.error.empty()) << hct.error;
  // q[x]: the probability that Enc(x) is another vertex (the alias table's law).
  std::vector<double> q(n, 0.0);
  uint32_t rows_with_others = 0;
  for (uint32_t x = 0; x < n; ++x) {
    const auto row = hct.codebook->row(x);
    ASSERT_FALSE(row.empty());
    double keep = 0;
    for (const fw::CodebookEntry& e : row) {
      const double accept = static_cast<double>(e.accept_q31) / fw::kQ31One;
      keep += (accept * (e.vertex == x) + (1 - accept) * (row[e.alias].vertex == x)) / row.size();
    }
    q[x] = 1 - keep;
    rows_with_others += row.size() > 1 ? 1 : 0;
  }
  // The raw score at ε = 2 collapses rows onto the vertex itself and its
  // exact ties: karate's structurally equivalent vertices (same neighbours,
  // hence the same M_v at DTW distance 0).
  EXPECT_GT(rows_with_others, 0u);
  EXPECT_LT(rows_with_others, n);

  std::vector<double> at(n, 0.0), next(n);
  for (uint32_t s = 0; s < n; ++s) at[s] = o.walks_per_vertex;  // walk starts: γ per vertex
  double expected = 0;
  for (uint32_t t = 0; t < o.walk_length; ++t) {
    std::fill(next.begin(), next.end(), 0.0);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint32_t u : g[v]) next[u] += at[v] / g[v].size();
    }
    at.swap(next);
    for (uint32_t v = 0; v < n; ++v) expected += at[v] * q[v];  // entry t is Enc(u_t)
  }
  const double observed = static_cast<double>(r.stats.neighbour_substitutions);
  EXPECT_GT(expected, 1000.0);
  // The encodings are independent given the path; the paths add some
  // correlation, hence 6 x sqrt instead of 4.
  EXPECT_NEAR(observed, expected, 6 * std::sqrt(expected)) << "expected " << expected;
}

void ExpectTheorem42(const Graph& g, uint32_t gamma, fw::JumpPredictor predictor) {
  WalkSimulationOptions o = Small(gamma, 0.2);
  o.predictor = predictor;
  const WalkSimulationResult r = Simulate(g, o);
  const WalkSimulationStats& s = r.stats;
  ASSERT_GT(s.messages_stderr, 0.0);
  EXPECT_NEAR(s.messages_recurrence, 32.639, 5e-4);
  // A triggered predictor with an empty pool takes a neighbour hop, which
  // adds messages: rare here, and within the tolerance.
  EXPECT_LT(s.empty_pool_hops, s.predicted_hops / 50);
  EXPECT_NEAR(s.messages_mean, s.messages_recurrence, 4 * s.messages_stderr)
      << "mean " << s.messages_mean << " +- " << s.messages_stderr;
}

TEST(WalkSimulationTest, MessagesPerWalkFollowTheorem42) {
  for (const fw::JumpPredictor predictor : {fw::JumpPredictor::kTree, fw::JumpPredictor::kNeighbours}) {
    SCOPED_TRACE(fw::JumpPredictorName(predictor));
    ExpectTheorem42(Karate(), 80, predictor);
    ExpectTheorem42(CirculantWithIsolatedVertex(60), 40, predictor);
  }
}

TEST(WalkSimulationTest, SameSeedSameCorpusWhateverTheThreads) {
  const Graph g = Karate();
  WalkSimulationOptions o = Small(10, 0.2);
  o.threads = 1;
  const WalkSimulationResult a = Simulate(g, o);
  o.threads = 2;
  const WalkSimulationResult b = Simulate(g, o);
  EXPECT_EQ(a.corpus.tokens(), b.corpus.tokens());
  EXPECT_EQ(a.corpus.offsets(), b.corpus.offsets());
  EXPECT_EQ(a.stats.predicted_hops, b.stats.predicted_hops);
  EXPECT_EQ(a.stats.neighbour_substitutions, b.stats.neighbour_substitutions);
  o.seed = 2;
  const WalkSimulationResult c = Simulate(g, o);
  EXPECT_NE(a.corpus.tokens(), c.corpus.tokens());
}

TEST(WalkSimulationTest, RejectsWhatNoJobWouldRun) {
  Graph g = Karate();
  WalkSimulationOptions o = Small(1, 0.2);
  o.p = 1.5;
  EXPECT_NE(SimulateWalks(g, o).error.find("p must be"), std::string::npos);
  o = Small(1, 0.2);
  o.walk_length = 1;
  EXPECT_NE(SimulateWalks(g, o).error.find("walk length"), std::string::npos);
  std::swap(g[0][0], g[0][1]);
  EXPECT_NE(SimulateWalks(g, Small(1, 0.2)).error.find("not sorted"), std::string::npos);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
