// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The Lumos trimming reference (Lumos Sec. V-C). The exact method's optimum
// is checked against quantities computed without it: every orientation of
// tiny graphs, the densest subset by enumeration, and ceil(max density) by
// max flow (Goldberg's construction, one integer threshold at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <queue>
#include <random>
#include <set>

#include "nodefl/compare/compare_role.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace nodefl::server::lumos {
namespace {

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

Edges RandomEdges(uint32_t n, double p, std::mt19937_64& rng) {
  Edges edges;
  std::bernoulli_distribution coin(p);
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t v = u + 1; v < n; ++v) {
      if (coin(rng)) edges.push_back({u, v});
    }
  }
  return edges;
}

// min over all 2^|E| orientations of the maximum load.
uint32_t BruteForceOptimum(uint32_t n, const Edges& edges) {
  uint32_t best = UINT32_MAX;
  const uint64_t count = uint64_t{1} << edges.size();
  std::vector<uint32_t> load(n);
  for (uint64_t mask = 0; mask < count; ++mask) {
    std::fill(load.begin(), load.end(), 0);
    for (size_t i = 0; i < edges.size(); ++i) ++load[(mask >> i) & 1 ? edges[i].second : edges[i].first];
    best = std::min(best, n ? *std::max_element(load.begin(), load.end()) : 0);
  }
  return best;
}

// ceil(max over nonempty S of |E(S)| / |S|) by enumerating subsets.
uint32_t BruteForceCeilDensity(uint32_t n, const Edges& edges) {
  uint32_t best = 0;
  for (uint64_t s = 1; s < (uint64_t{1} << n); ++s) {
    uint64_t inside = 0;
    for (auto [u, v] : edges) inside += ((s >> u) & 1) && ((s >> v) & 1);
    const uint64_t size = static_cast<uint64_t>(__builtin_popcountll(s));
    best = std::max<uint32_t>(best, static_cast<uint32_t>((inside + size - 1) / size));
  }
  return best;
}

// Dinic max flow.
class MaxFlow {
 public:
  explicit MaxFlow(size_t n) : adj_(n), level_(n), it_(n) {}
  void Add(size_t u, size_t v, int64_t cap) {
    adj_[u].push_back(arcs_.size());
    arcs_.push_back({v, cap});
    adj_[v].push_back(arcs_.size());
    arcs_.push_back({u, 0});
  }
  int64_t Run(size_t s, size_t t) {
    int64_t flow = 0;
    while (Bfs(s, t)) {
      std::fill(it_.begin(), it_.end(), 0);
      while (int64_t f = Dfs(s, t, std::numeric_limits<int64_t>::max())) flow += f;
    }
    return flow;
  }

 private:
  struct Arc {
    size_t to;
    int64_t cap;
  };
  bool Bfs(size_t s, size_t t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<size_t> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      size_t u = q.front();
      q.pop();
      for (size_t a : adj_[u]) {
        if (arcs_[a].cap > 0 && level_[arcs_[a].to] < 0) {
          level_[arcs_[a].to] = level_[u] + 1;
          q.push(arcs_[a].to);
        }
      }
    }
    return level_[t] >= 0;
  }
  int64_t Dfs(size_t u, size_t t, int64_t f) {
    if (u == t) return f;
    for (size_t& i = it_[u]; i < adj_[u].size(); ++i) {
      Arc& arc = arcs_[adj_[u][i]];
      if (arc.cap <= 0 || level_[arc.to] != level_[u] + 1) continue;
      if (int64_t got = Dfs(arc.to, t, std::min(f, arc.cap))) {
        arc.cap -= got;
        arcs_[adj_[u][i] ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }
  std::vector<std::vector<size_t>> adj_;
  std::vector<Arc> arcs_;
  std::vector<int> level_;
  std::vector<size_t> it_;
};

// Goldberg: source -> edge node (1), edge node -> endpoints (inf), vertex ->
// sink (k). The min cut is |E| - max_S(|E(S)| - k|S|), so the flow is |E|
// iff no S has density above k. Smallest such k = ceil(max density).
uint32_t FlowCeilDensity(uint32_t n, const Edges& edges) {
  if (edges.empty()) return 0;
  for (uint32_t k = 1;; ++k) {
    const size_t source = n + edges.size(), sink = source + 1;
    MaxFlow flow(sink + 1);
    for (size_t i = 0; i < edges.size(); ++i) {
      flow.Add(source, n + i, 1);
      flow.Add(n + i, edges[i].first, 1);
      flow.Add(n + i, edges[i].second, 1);
    }
    for (uint32_t v = 0; v < n; ++v) flow.Add(v, sink, k);
    if (flow.Run(source, sink) == static_cast<int64_t>(edges.size())) return k;
  }
}

void ExpectOrientation(const Trimming& t) { EXPECT_EQ(t.CheckInvariant(true), ""); }

TEST(LumosTrimmingTest, ExactEqualsEveryOrientationOfEveryGraphOnFiveVertices) {
  // All 1024 labelled graphs on 5 vertices (and their subgraphs on fewer).
  const uint32_t n = 5;
  Edges all;
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = u + 1; v < n; ++v) all.push_back({u, v});
  for (uint32_t mask = 0; mask < (1u << all.size()); ++mask) {
    Edges edges;
    for (size_t i = 0; i < all.size(); ++i)
      if ((mask >> i) & 1) edges.push_back(all[i]);
    TrimGraph g(n, edges);
    ASSERT_TRUE(g.valid());
    const Trimming exact = Exact(Greedy(g), {.check_invariant = true});
    ExpectOrientation(exact);
    ASSERT_EQ(exact.max_workload(), BruteForceOptimum(n, edges)) << "graph mask " << mask;
    ASSERT_EQ(exact.max_workload(), BruteForceCeilDensity(n, edges)) << "graph mask " << mask;
  }
}

TEST(LumosTrimmingTest, ExactEqualsBruteForceOnRandomGraphsUpToEightVertices) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int seed = 0; seed < 600; ++seed) {
    const uint32_t n = 2 + static_cast<uint32_t>(rng() % 7);  // 2..8
    const double p = 0.15 + 0.8 * static_cast<double>(rng() % 1000) / 1000.0;
    const Edges edges = RandomEdges(n, p, rng);
    TrimGraph g(n, edges);
    const Trimming greedy = Greedy(g);
    const Trimming exact = Exact(greedy, {.check_invariant = true});
    ExpectOrientation(exact);
    const uint32_t density = BruteForceCeilDensity(n, edges);
    EXPECT_EQ(exact.max_workload(), density) << "seed " << seed;
    // Every orientation, while 2^|E| stays small.
    if (edges.size() <= 18) {
      EXPECT_EQ(exact.max_workload(), BruteForceOptimum(n, edges)) << "seed " << seed;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(LumosTrimmingTest, ExactEqualsCeilDensityByMaxFlowOnRandomGraphs) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 24; ++round) {
    const uint32_t n = 20 + static_cast<uint32_t>(rng() % 280);  // up to ~300
    // From sparse to dense, plus a dense core to make the densest set small.
    const double p = (1 + static_cast<double>(rng() % 30)) / n;
    Edges edges = RandomEdges(n, p, rng);
    if (round % 3 == 0) {
      std::set<std::pair<uint32_t, uint32_t>> have(edges.begin(), edges.end());
      for (uint32_t u = 0; u < 12; ++u)
        for (uint32_t v = u + 1; v < 12; ++v)
          if (have.insert({u, v}).second) edges.push_back({u, v});
    }
    TrimGraph g(n, edges);
    ASSERT_TRUE(g.valid()) << g.error();
    MethodStats greedy_stats, mcmc_stats, exact_stats;
    const Trimming greedy = Greedy(g, &greedy_stats);
    McmcStats mstats;
    const Trimming mcmc = Mcmc(greedy, {.iterations = 200, .seed = static_cast<uint64_t>(round), .check_invariant = true}, &mstats);
    const Trimming exact = Exact(greedy, {.check_invariant = true}, &exact_stats);
    ExpectOrientation(exact);
    EXPECT_EQ(exact.max_workload(), FlowCeilDensity(n, edges)) << "round " << round << " n " << n;
    EXPECT_LE(exact.max_workload(), greedy.max_workload());
    EXPECT_LE(exact.max_workload(), mcmc.max_workload());
    EXPECT_EQ(greedy_stats.comparisons, g.num_edges());
    EXPECT_EQ(mstats.iterations, 200u);
    // Two Alg. 3 runs (|E| each, plus the candidates' pairs) and line 7.
    EXPECT_GE(mstats.comparisons, 200 * (2 * g.num_edges() + 1));
  }
}

TEST(LumosTrimmingTest, ExactFromAnyStartReachesTheSameOptimum) {
  std::mt19937_64 rng(3);
  const uint32_t n = 60;
  const Edges edges = RandomEdges(n, 0.2, rng);
  TrimGraph g(n, edges);
  Trimming all_a(g);  // every edge kept by its lower endpoint: a bad start
  Trimming random_start(g);
  for (uint64_t e = 0; e < g.num_edges(); ++e) random_start.Set(e, rng() & 1 ? Keeper::kA : Keeper::kB);
  const uint32_t expected = FlowCeilDensity(n, edges);
  EXPECT_EQ(Exact(all_a, {.check_invariant = true}).max_workload(), expected);
  EXPECT_EQ(Exact(random_start, {.check_invariant = true}).max_workload(), expected);
  EXPECT_EQ(Exact(Greedy(g), {.check_invariant = true}).max_workload(), expected);
}

TEST(LumosTrimmingTest, EveryEdgeIsCoveredAfterEachMethod) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 20; ++round) {
    const uint32_t n = 10 + static_cast<uint32_t>(rng() % 60);
    TrimGraph g(n, RandomEdges(n, 0.25, rng));
    const Trimming greedy = Greedy(g);
    // Greedy keeps log-degree ties in both trees (the project's rule), and
    // only those.
    EXPECT_EQ(greedy.CheckInvariant(false), "");
    for (uint64_t e = 0; e < g.num_edges(); ++e) {
      const bool tie = LogDegree(g.degree(g.a(e))) == LogDegree(g.degree(g.b(e)));
      EXPECT_EQ(greedy.keeper(e) == Keeper::kBoth, tie);
    }
    McmcStats stats;
    const Trimming mcmc = Mcmc(greedy, {.iterations = 300, .seed = 9, .check_invariant = true}, &stats);
    EXPECT_EQ(mcmc.CheckInvariant(false), "");
    // MCMC never makes an edge kept twice: only greedy's ties can remain.
    for (uint64_t e = 0; e < g.num_edges(); ++e) {
      if (mcmc.keeper(e) == Keeper::kBoth) {
        EXPECT_EQ(greedy.keeper(e), Keeper::kBoth);
      }
    }
    ExpectOrientation(Exact(mcmc, {.check_invariant = true}));
  }
}

TEST(LumosTrimmingTest, GreedyEqualsTheSecureCompareJobsPlaintextRule) {
  // The rule tests/server/secure_compare_integration_test.cc checks the
  // private job against: u keeps v iff LogDegree(v) >= LogDegree(u), with
  // the SDK's own LogDegree.
  const auto check = [](const TrimGraph& g) {
    const Trimming t = Greedy(g);
    for (uint32_t u = 0; u < g.num_vertices(); ++u) {
      const uint32_t du = compare::SecureCompareRole::LogDegree(g.degree(u));
      for (uint64_t e : g.incident(u)) {
        const uint32_t dv = compare::SecureCompareRole::LogDegree(g.degree(g.other(e, u)));
        ASSERT_EQ(t.keeps(u, e), dv >= du) << "vertex " << u << " edge " << e;
      }
    }
  };
  for (uint32_t d = 0; d < 100000; ++d) ASSERT_EQ(LogDegree(d), compare::SecureCompareRole::LogDegree(d)) << d;
  std::mt19937_64 rng(1);
  for (int round = 0; round < 10; ++round) check(TrimGraph(80, RandomEdges(80, 0.01 + 0.05 * round, rng)));
  for (const char* name : {"karate", "cora"}) {
    const auto dir = std::filesystem::path(NODEFL_DATASETS_DIR) / name;
    if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " missing";
    const auto loaded = dataset::LoadGraph(dir);
    ASSERT_TRUE(loaded.ok) << loaded.error;
    const Edges edges = dataset::UndirectedEdges(loaded.graph);
    TrimGraph g(loaded.graph.num_nodes, edges);
    check(g);
    const Trimming exact = Exact(Greedy(g));
    EXPECT_EQ(exact.max_workload(), FlowCeilDensity(g.num_vertices(), edges)) << name;
  }
}

// Eq. 18: a proposal whose maximum is worse by delta is accepted with
// probability e^{-delta}; others always. On a small graph the chain proposes
// delta = +1 often; the accepted count is Binomial(N, e^{-1}), checked to
// 5 sigma.
TEST(LumosTrimmingTest, McmcAcceptanceMatchesEq18) {
  // A wheel: hub 0 with 8 spokes, rim cycle 1..8, plus chords.
  Edges edges;
  for (uint32_t v = 1; v <= 8; ++v) edges.push_back({0, v});
  for (uint32_t v = 1; v <= 8; ++v) edges.push_back({v, v % 8 + 1});
  edges.push_back({1, 5});
  edges.push_back({3, 7});
  TrimGraph g(9, edges);
  McmcStats stats;
  Mcmc(Greedy(g), {.iterations = 40000, .seed = 2024, .check_invariant = false}, &stats);
  uint64_t total = 0;
  for (const auto& [delta, a] : stats.by_delta) {
    total += a.proposed;
    EXPECT_LE(delta, 1) << "a move raises the maximum by at most one";
    if (delta <= 0) {
      EXPECT_EQ(a.accepted, a.proposed) << "delta " << delta;
      continue;
    }
    const double p = std::exp(-static_cast<double>(delta));
    const double n = static_cast<double>(a.proposed);
    ASSERT_GT(n, 1000) << "too few worse proposals to test";
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(a.accepted), n * p, 5 * sigma) << "delta " << delta;
  }
  EXPECT_EQ(total + stats.skipped, 40000u);
  ASSERT_TRUE(stats.by_delta.count(1));
}

// The comparison counts, worked by hand on a star (centre 0, leaves 1..4).
// Greedy: LogDegree(4) = 1 > LogDegree(1) = 0, so every leaf keeps its edge
// (4 comparisons). One MCMC iteration: Alg. 3 compares across the 4 edges;
// the leaves (1 > 0) are the candidates, C(4, 2) = 6 pairs; a leaf gives its
// one edge to the centre (k = 1); Alg. 3 again: 4 + C(4, 2) (the centre and
// the three other leaves tie at 1); line 7: 1. Total 21, delta 0, accepted.
// Exact from greedy: level 1, 2|V| - 1 = 9, then a search from a leaf
// reaches the centre (1 more) and cannot go on: optimal, 10.
// Alg. 3 with ties: neighbours that tie at a local maximum are both
// candidates, equal maxima far apart are both "largest", and the count is one
// comparison per edge plus one per pair of candidates.
TEST(LumosTrimmingTest, CandidateVertexSetWithTies) {
  // Two triangles {0,1,2} and {3,4,5} joined by the edge 2-3.
  const TrimGraph g(6, {{0, 1}, {1, 2}, {0, 2}, {3, 4}, {4, 5}, {3, 5}, {2, 3}});
  ASSERT_TRUE(g.valid());
  Trimming t(g);  // every edge kept by its first endpoint
  // wl: 0 keeps 1 and 2; 1 keeps 2; 2 keeps 3; 3 keeps 4 and 5; 4 keeps 5.
  ASSERT_EQ(t.workloads(), (std::vector<uint32_t>{2, 1, 1, 2, 1, 0}));
  CandidateVertexSet cvs = FindCandidateVertexSet(t);
  // 0 and 3 are local maxima with equal workloads, not neighbours.
  EXPECT_EQ(cvs.candidates, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(cvs.largest, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(cvs.comparisons, 7u + 1u);

  // 2 takes edge 1-2: wl(2) = 2 ties with its neighbours 0 and 3.
  t.Set(1, Keeper::kB);
  ASSERT_EQ(t.workloads(), (std::vector<uint32_t>{2, 0, 2, 2, 1, 0}));
  cvs = FindCandidateVertexSet(t);
  EXPECT_EQ(cvs.candidates, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(cvs.largest, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(cvs.comparisons, 7u + 3u);

  // 3 takes edge 2-3: one maximum again; 0 is still a (smaller) candidate.
  t.Set(6, Keeper::kB);
  ASSERT_EQ(t.workloads(), (std::vector<uint32_t>{2, 0, 1, 3, 1, 0}));
  cvs = FindCandidateVertexSet(t);
  EXPECT_EQ(cvs.candidates, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(cvs.largest, (std::vector<uint32_t>{3}));
  EXPECT_EQ(cvs.comparisons, 7u + 1u);

  // Everyone equal (a cycle kept one way round): every device is a
  // candidate and every one is largest.
  const TrimGraph ring(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}});
  Trimming r(ring);
  r.Set(4, Keeper::kB);  // 4 keeps 0: everyone keeps exactly one
  cvs = FindCandidateVertexSet(r);
  EXPECT_EQ(cvs.candidates.size(), 5u);
  EXPECT_EQ(cvs.largest.size(), 5u);
  EXPECT_EQ(cvs.comparisons, 5u + 10u);
}

TEST(LumosTrimmingTest, ComparisonCountsOnAStar) {
  TrimGraph g(5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}});
  MethodStats greedy_stats, exact_stats;
  const Trimming greedy = Greedy(g, &greedy_stats);
  EXPECT_EQ(greedy_stats.comparisons, 4u);
  EXPECT_EQ(greedy.workloads(), (std::vector<uint32_t>{0, 1, 1, 1, 1}));
  McmcStats stats;
  const Trimming mcmc = Mcmc(greedy, {.iterations = 1, .seed = 1, .check_invariant = true}, &stats);
  EXPECT_EQ(stats.comparisons, 21u);
  EXPECT_EQ(stats.moves, 1u);
  EXPECT_EQ(stats.by_delta.at(0).accepted, 1u);
  EXPECT_EQ(mcmc.workload(0), 1u);
  EXPECT_EQ(mcmc.max_workload(), 1u);
  const Trimming exact = Exact(greedy, {.check_invariant = true}, &exact_stats);
  EXPECT_EQ(exact_stats.comparisons, 10u);
  EXPECT_EQ(exact_stats.moves, 0u);
  EXPECT_EQ(exact_stats.iterations, 1u);
  EXPECT_EQ(exact.max_workload(), 1u);
}

TEST(LumosTrimmingTest, McmcIsReproducibleFromItsSeed) {
  std::mt19937_64 rng(8);
  TrimGraph g(50, RandomEdges(50, 0.2, rng));
  const Trimming a = Mcmc(Greedy(g), {.iterations = 500, .seed = 4});
  const Trimming b = Mcmc(Greedy(g), {.iterations = 500, .seed = 4});
  EXPECT_EQ(a.workloads(), b.workloads());
}

TEST(LumosTrimmingTest, RejectsMalformedGraphs) {
  EXPECT_FALSE(TrimGraph(3, {{0, 0}}).valid());
  EXPECT_FALSE(TrimGraph(3, {{0, 1}, {1, 0}}).valid());
  EXPECT_FALSE(TrimGraph(3, {{0, 3}}).valid());
  const TrimGraph empty(4, {});
  EXPECT_EQ(Exact(Greedy(empty)).max_workload(), 0u);
  EXPECT_EQ(Mcmc(Greedy(empty), {.iterations = 3}).max_workload(), 0u);
}

// The designed round protocol (docs/lumos.md): after every round each edge
// is kept exactly once, sum wl^2 falls in every round that moves an edge and
// stays put otherwise, and the last round is a search that found nothing.
void ExpectRoundsInvariants(const RoundsStats& s) {
  const size_t rounds = s.local_rounds + s.search_rounds;
  ASSERT_EQ(s.max_by_round.size(), rounds + 1);
  ASSERT_EQ(s.potential_by_round.size(), rounds + 1);
  ASSERT_EQ(s.search_round.size(), rounds);
  for (size_t r = 1; r <= rounds; ++r) {
    if (s.moved_by_round[r] > 0) {
      EXPECT_LT(s.potential_by_round[r], s.potential_by_round[r - 1]) << "round " << r;
    } else {
      EXPECT_EQ(s.potential_by_round[r], s.potential_by_round[r - 1]) << "round " << r;
    }
    // A search round comes only after a local round that moved nothing.
    if (s.search_round[r - 1]) {
      EXPECT_EQ(s.moved_by_round[r - 1], 0u) << "round " << r;
    }
  }
  EXPECT_EQ(s.search_round.back(), 1);
  EXPECT_EQ(s.moved_by_round.back(), 0u);
  EXPECT_LE(s.transfers, s.offers);
}

Edges LoadEdges(const char* name, uint32_t* n) {
  const auto loaded = dataset::LoadGraph(std::filesystem::path(NODEFL_DATASETS_DIR) / name);
  *n = 0;
  if (!loaded.ok) return {};
  *n = loaded.graph.num_nodes;
  return dataset::UndirectedEdges(loaded.graph);
}

TEST(LumosRoundsTest, ReachesTheOptimumOnRandomGraphs) {
  std::mt19937_64 rng(21);
  for (int round = 0; round < 40; ++round) {
    const uint32_t n = 5 + static_cast<uint32_t>(rng() % 295);
    const double p = (1 + static_cast<double>(rng() % 25)) / n;
    Edges edges = RandomEdges(n, p, rng);
    if (round % 4 == 0) {  // a dense core, so the densest set is small
      std::set<std::pair<uint32_t, uint32_t>> have(edges.begin(), edges.end());
      for (uint32_t u = 0; u < std::min<uint32_t>(n, 10); ++u)
        for (uint32_t v = u + 1; v < std::min<uint32_t>(n, 10); ++v)
          if (have.insert({u, v}).second) edges.push_back({u, v});
    }
    TrimGraph g(n, edges);
    ASSERT_TRUE(g.valid()) << g.error();
    const Trimming greedy = Greedy(g);
    RoundsStats stats;
    const Trimming rounds = Rounds(greedy, {.seed = static_cast<uint64_t>(round), .check_invariant = true}, &stats);
    ExpectOrientation(rounds);
    const uint32_t optimum = FlowCeilDensity(n, edges);
    EXPECT_EQ(rounds.max_workload(), optimum) << "round " << round << " n " << n;
    EXPECT_EQ(Exact(greedy).max_workload(), optimum);
    EXPECT_EQ(stats.max_by_round.back(), optimum);
    ExpectRoundsInvariants(stats);
  }
}

TEST(LumosRoundsTest, ReachesTheOptimumOnKarateFromAnySeed) {
  uint32_t n = 0;
  const Edges edges = LoadEdges("karate", &n);
  if (edges.empty()) GTEST_SKIP() << "karate missing";
  TrimGraph g(n, edges);
  const uint32_t optimum = FlowCeilDensity(n, edges);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RoundsStats stats;
    const Trimming t = Rounds(Greedy(g), {.seed = seed, .check_invariant = true}, &stats);
    EXPECT_EQ(t.max_workload(), optimum) << "seed " << seed;
    ExpectRoundsInvariants(stats);
    // Also from the worst start: every edge with its lower endpoint.
    EXPECT_EQ(Rounds(Trimming(g), {.seed = seed, .check_invariant = true}).max_workload(), optimum);
  }
}

// Counts worked by hand. 0 keeps {0,1} and {0,2}, 1 keeps {1,3}, 2 keeps
// {2,3}: loads 2, 1, 1, 0. No neighbour of anyone is 2 below it, but the
// path 0 -> 1 -> 3 is improving.
TEST(LumosRoundsTest, CountsOnAFourCycleThatNeedsALongerPath) {
  TrimGraph g(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  const Trimming start(g);  // every edge with its lower endpoint: that orientation
  ASSERT_EQ(start.workloads(), (std::vector<uint32_t>{2, 1, 1, 0}));
  RoundsStats s;
  const Trimming t = Rounds(start, {.check_invariant = true}, &s);
  EXPECT_EQ(t.max_workload(), 1u);
  EXPECT_EQ(s.local_rounds, 2u);
  EXPECT_EQ(s.search_rounds, 2u);
  EXPECT_EQ(s.offers, 0u);
  EXPECT_EQ(s.search_reversals, 1u);
  EXPECT_EQ(s.longest_search_path, 2u);
  EXPECT_EQ(s.local_comparisons, 8u);  // 4 kept edges, two local rounds
  // First search: 0 reaches 1, 2, 3 (hit at 3); 1 and 2 reach 3; 3 keeps
  // nothing. Second: on the directed 4-cycle each vertex reaches 3 others.
  EXPECT_EQ(s.search_comparisons, 5u + 12u);
  EXPECT_EQ(s.max_by_round, (std::vector<uint32_t>{2, 2, 1, 1, 1}));
  ExpectRoundsInvariants(s);

  // A search depth of 1 sees only neighbours: it stops at once, at 2.
  RoundsStats shallow;
  EXPECT_EQ(Rounds(start, {.search_depth = 1}, &shallow).max_workload(), 2u);
  EXPECT_EQ(shallow.search_rounds, 1u);
  EXPECT_EQ(shallow.search_comparisons, 4u);
}

TEST(LumosRoundsTest, TiesAreDroppedByTheLowerEndpoint) {
  TrimGraph g(2, {{0, 1}});
  const Trimming greedy = Greedy(g);
  ASSERT_EQ(greedy.keeper(0), Keeper::kBoth);
  RoundsStats s;
  const Trimming t = Rounds(greedy, {.check_invariant = true}, &s);
  EXPECT_EQ(t.keeper(0), Keeper::kB);
  EXPECT_EQ(s.local_comparisons, 1u);
  EXPECT_EQ(s.search_comparisons, 1u);
  EXPECT_EQ(Rounds(Greedy(TrimGraph(4, {}))).max_workload(), 0u);
}

TEST(LumosRoundsTest, IsReproducibleFromItsSeed) {
  std::mt19937_64 rng(8);
  TrimGraph g(120, RandomEdges(120, 0.1, rng));
  RoundsStats a, b;
  EXPECT_EQ(Rounds(Greedy(g), {.seed = 4}, &a).workloads(), Rounds(Greedy(g), {.seed = 4}, &b).workloads());
  EXPECT_EQ(a.offers, b.offers);
  EXPECT_EQ(a.search_comparisons, b.search_comparisons);
}

}  // namespace
}  // namespace nodefl::server::lumos
