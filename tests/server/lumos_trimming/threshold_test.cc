// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The threshold method of Lumos trimming (threshold.h): the schedule of
// public thresholds on its own, and the plaintext simulation of the device
// protocol against Exact() on many graph shapes, starts and seeds. Beyond the
// final optimum, every run's statistics are checked for what the protocol
// promises round by round: the maximum never rises, a drain ends only when
// feasible or provably stuck, and the thresholds are exactly the schedule's.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/server/lumos/trimming/threshold.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace nodefl::server::lumos {
namespace {

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

// The drain bound the schedule promises for optimum m: doubling needs
// ceil(log2(m+1)) + 1 drains, bisection at most as many again.
uint32_t DrainBound(uint32_t m) { return 2 * static_cast<uint32_t>(std::bit_width(m)) + 2; }

// ---------------------------------------------------------------------------
// ThresholdSchedule on its own: a drain at T is feasible iff T >= m.

struct ScheduleRun {
  std::vector<uint32_t> proposed;
  bool done = false;
  uint32_t optimum = 0;
  uint32_t drains = 0;
};

// Drives the schedule against an oracle optimum m, recording failures of the
// "never re-propose a decided threshold" rule as gtest failures. `known` is
// the hint the schedule starts from (a threshold known stuck, below m);
// `limit` stops a schedule that would never finish.
ScheduleRun DriveSchedule(uint32_t m, uint32_t known, uint32_t limit) {
  ScheduleRun run;
  ThresholdSchedule schedule(known);
  uint32_t highest_stuck = known;  // 0: none yet
  uint32_t lowest_feasible = 0;  // 0: none yet
  while (!schedule.done() && run.proposed.size() < limit) {
    const uint32_t t = schedule.threshold();
    // Anything at or below a stuck threshold is known stuck (the optimum is
    // above it), anything at or above a feasible one known feasible: a new
    // proposal must lie strictly between the two.
    EXPECT_GT(t, highest_stuck) << "m " << m << " known " << known << " re-proposes a threshold known stuck";
    if (lowest_feasible != 0) {
      EXPECT_LT(t, lowest_feasible) << "m " << m << " known " << known << " re-proposes a threshold known feasible";
    }
    EXPECT_EQ(std::count(run.proposed.begin(), run.proposed.end(), t), 0)
        << "m " << m << " known " << known << " proposes " << t << " twice";
    run.proposed.push_back(t);
    const bool feasible = t >= m;
    if (feasible) {
      lowest_feasible = lowest_feasible == 0 ? t : std::min(lowest_feasible, t);
    } else {
      highest_stuck = std::max(highest_stuck, t);
    }
    schedule.OnDrainEnded(feasible);
  }
  run.done = schedule.done();
  run.optimum = schedule.optimum();
  run.drains = schedule.drains();
  return run;
}

TEST(LumosThresholdScheduleTest, FindsEveryOptimumUpTo300WithinTheDrainBound) {
  for (uint32_t m = 1; m <= 300; ++m) {
    const ScheduleRun run = DriveSchedule(m, 0, 200);
    ASSERT_TRUE(run.done) << "m " << m << " not done after " << run.proposed.size() << " drains";
    EXPECT_EQ(run.optimum, m);
    EXPECT_EQ(run.drains, run.proposed.size()) << "m " << m;
    EXPECT_LE(run.proposed.size(), DrainBound(m)) << "m " << m;
    // The first drain is always at 1 (the cheapest test, and the answer for
    // matchings and forests of stars).
    EXPECT_EQ(run.proposed.front(), 1u);
  }
}

TEST(LumosThresholdScheduleTest, FindsLargeOptimaWithoutOverflow) {
  // Past 2^31 the doubling saturates at UINT32_MAX instead of wrapping to 0.
  for (uint32_t m : {1024u, 1025u, (1u << 20) - 1, 1u << 20, (1u << 31) - 1, 1u << 31, (1u << 31) + 5, UINT32_MAX - 1,
                     UINT32_MAX}) {
    const ScheduleRun run = DriveSchedule(m, 0, 200);
    ASSERT_TRUE(run.done) << "m " << m;
    EXPECT_EQ(run.optimum, m);
    EXPECT_LE(run.proposed.size(), DrainBound(m)) << "m " << m;
  }
}

TEST(LumosThresholdScheduleTest, StartsAboveAKnownInfeasibleThreshold) {
  // Any correct hint k < m: the first drain is at k + 1, nothing at or below
  // k is ever tried, and the drain bound still holds.
  for (uint32_t m = 1; m <= 300; ++m) {
    for (uint32_t k : {0u, 1u, m / 3, m / 2, m - 2, m - 1}) {
      if (k >= m) continue;  // m - 2 wraps for m = 1; 1 is no hint below m = 1
      const ScheduleRun run = DriveSchedule(m, k, 200);
      ASSERT_TRUE(run.done) << "m " << m << " known " << k;
      EXPECT_EQ(run.optimum, m) << "known " << k;
      EXPECT_EQ(run.proposed.front(), k + 1) << "m " << m;
      EXPECT_LE(run.proposed.size(), DrainBound(m)) << "m " << m << " known " << k;
    }
  }
  // The hint m - 1 leaves one drain, at m, feasible.
  EXPECT_EQ(DriveSchedule(77, 76, 200).proposed, (std::vector<uint32_t>{77}));
}

TEST(LumosThresholdScheduleTest, KnownInfeasibleIsCeilOfTheMeanLoadMinusOne) {
  EXPECT_EQ(KnownInfeasible(0, 0), 0u);
  EXPECT_EQ(KnownInfeasible(0, 5), 0u);
  EXPECT_EQ(KnownInfeasible(5, 0), 0u);
  EXPECT_EQ(KnownInfeasible(1, 2), 0u);  // mean 0.5: ceil 1
  EXPECT_EQ(KnownInfeasible(2, 2), 0u);  // mean 1: a perfect orientation may reach 1
  EXPECT_EQ(KnownInfeasible(3, 2), 1u);
  EXPECT_EQ(KnownInfeasible(4, 2), 1u);
  EXPECT_EQ(KnownInfeasible(5, 2), 2u);
  EXPECT_EQ(KnownInfeasible(27806, 7624), 3u);  // lastfm: mean 3.65
  // Clamped so that the schedule's first threshold, hint + 1, still fits.
  const uint32_t huge = KnownInfeasible(uint64_t{1} << 40, 1);
  EXPECT_EQ(huge, UINT32_MAX - 1);
  EXPECT_EQ(ThresholdSchedule(huge).threshold(), UINT32_MAX);
}

TEST(LumosThresholdScheduleTest, DrainControllerRunsStepsUntilFeasibleOrStuck) {
  DrainController c;
  EXPECT_EQ(c.step(), 1u);
  EXPECT_EQ(c.threshold(), 1u);
  c.EndStep(/*still_over=*/true, /*relief=*/3);  // progress: the drain at 1 goes on
  EXPECT_EQ(c.step(), 2u);
  EXPECT_EQ(c.threshold(), 1u);
  EXPECT_EQ(c.schedule().drains(), 0u);
  c.EndStep(true, 0);  // no root relieved: stuck at 1
  EXPECT_EQ(c.step(), 3u);
  EXPECT_EQ(c.threshold(), 2u);
  EXPECT_EQ(c.schedule().drains(), 1u);
  c.EndStep(true, 1);
  EXPECT_EQ(c.threshold(), 2u);
  EXPECT_FALSE(c.done());
  c.EndStep(false, 0);  // nobody above 2: feasible, and 1 was stuck
  EXPECT_TRUE(c.done());
  EXPECT_EQ(c.schedule().optimum(), 2u);
  EXPECT_EQ(c.schedule().drains(), 2u);
  EXPECT_EQ(c.step(), 5u);

  // With a hint the first step is already at hint + 1.
  DrainController hinted(6);
  EXPECT_EQ(hinted.threshold(), 7u);
  hinted.EndStep(false, 0);
  EXPECT_TRUE(hinted.done());
  EXPECT_EQ(hinted.schedule().optimum(), 7u);
}

TEST(LumosThresholdScheduleTest, IgnoresDrainsAfterItIsDone) {
  ThresholdSchedule schedule;
  schedule.OnDrainEnded(false);  // 1 stuck
  schedule.OnDrainEnded(true);   // 2 feasible: done at 2
  ASSERT_TRUE(schedule.done());
  EXPECT_EQ(schedule.optimum(), 2u);
  EXPECT_EQ(schedule.drains(), 2u);
  schedule.OnDrainEnded(false);
  schedule.OnDrainEnded(true);
  EXPECT_TRUE(schedule.done());
  EXPECT_EQ(schedule.optimum(), 2u);
  EXPECT_EQ(schedule.drains(), 2u);
}

// ---------------------------------------------------------------------------
// Graph generators (simple graphs, each edge once).

Edges ErdosRenyi(uint32_t n, double p, std::mt19937_64& rng) {
  Edges edges;
  std::bernoulli_distribution coin(p);
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = u + 1; v < n; ++v)
      if (coin(rng)) edges.push_back({u, v});
  return edges;
}

// Preferential attachment: each new vertex links to `m` distinct earlier
// ones chosen with probability proportional to degree, which gives a few
// hubs of high degree next to many vertices of degree m (power-law-ish).
Edges PreferentialAttachment(uint32_t n, uint32_t m, std::mt19937_64& rng) {
  Edges edges;
  std::vector<uint32_t> ends;  // every edge's endpoints: sampling proportional to degree
  const uint32_t seed_size = std::min(n, m + 1);
  for (uint32_t u = 0; u < seed_size; ++u)
    for (uint32_t v = u + 1; v < seed_size; ++v) {
      edges.push_back({u, v});
      ends.push_back(u);
      ends.push_back(v);
    }
  for (uint32_t v = seed_size; v < n; ++v) {
    std::set<uint32_t> targets;
    while (targets.size() < std::min(m, v)) {
      const uint32_t u = ends.empty() ? static_cast<uint32_t>(rng() % v) : ends[rng() % ends.size()];
      targets.insert(u);
    }
    for (uint32_t u : targets) {
      edges.push_back({u, v});
      ends.push_back(u);
      ends.push_back(v);
    }
  }
  return edges;
}

// A few hubs, densely linked among themselves, and many leaves each attached
// to one or two hubs: searches from the hubs fan out wide but shallow, and
// the hubs' own clique is the densest set.
Edges StarHeavy(uint32_t hubs, uint32_t leaves, double hub_p, std::mt19937_64& rng) {
  Edges edges;
  std::bernoulli_distribution coin(hub_p);
  for (uint32_t u = 0; u < hubs; ++u)
    for (uint32_t v = u + 1; v < hubs; ++v)
      if (coin(rng)) edges.push_back({u, v});
  for (uint32_t leaf = hubs; leaf < hubs + leaves; ++leaf) {
    const uint32_t h1 = static_cast<uint32_t>(rng() % hubs);
    edges.push_back({h1, leaf});
    const uint32_t h2 = static_cast<uint32_t>(rng() % hubs);
    if (h2 != h1 && rng() % 3 == 0) edges.push_back({h2, leaf});
  }
  return edges;
}

Edges Clique(uint32_t n) {
  Edges edges;
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = u + 1; v < n; ++v) edges.push_back({u, v});
  return edges;
}

Edges Star(uint32_t n) {  // centre 0
  Edges edges;
  for (uint32_t v = 1; v < n; ++v) edges.push_back({0, v});
  return edges;
}

Edges Path(uint32_t n) {
  Edges edges;
  for (uint32_t v = 1; v < n; ++v) edges.push_back({v - 1, v});
  return edges;
}

// Relabels vertices at random, so that "every edge kept by its lower
// endpoint" and the tie rule's lower-endpoint drop do not always favour the
// generator's construction order (hub 0, path from 0, ...).
Edges Shuffled(uint32_t n, const Edges& edges, std::mt19937_64& rng) {
  std::vector<uint32_t> label(n);
  std::iota(label.begin(), label.end(), 0u);
  std::shuffle(label.begin(), label.end(), rng);
  Edges out;
  for (auto [u, v] : edges) out.push_back({label[u], label[v]});
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

struct GraphCase {
  std::string name;
  uint32_t n = 0;
  Edges edges;
};

std::vector<GraphCase> Cases() {
  std::vector<GraphCase> cases;
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 18; ++i) {
    const uint32_t n = 2 + static_cast<uint32_t>(rng() % 199);  // 2..200
    // Average degree from about 0.5 to 25.
    const double p = std::min(1.0, (0.5 + static_cast<double>(rng() % 250) / 10.0) / n);
    cases.push_back({"erdos-renyi #" + std::to_string(i) + " n " + std::to_string(n) + " p " + std::to_string(p), n,
                     ErdosRenyi(n, p, rng)});
  }
  // Dense Erdős–Rényi graphs, where the optimum is close to half the degree.
  for (double p : {0.5, 0.8, 1.0}) {
    cases.push_back({"dense erdos-renyi p " + std::to_string(p), 40, ErdosRenyi(40, p, rng)});
  }
  for (uint32_t m : {1u, 2u, 3u, 6u}) {
    const uint32_t n = 150 + 30 * m;
    cases.push_back({"preferential attachment m " + std::to_string(m), n,
                     Shuffled(n, PreferentialAttachment(n, m, rng), rng)});
  }
  cases.push_back({"star-heavy 4 hubs", 204, StarHeavy(4, 200, 1.0, rng)});
  cases.push_back({"star-heavy 12 hubs", 262, Shuffled(262, StarHeavy(12, 250, 0.7, rng), rng)});
  cases.push_back({"star-heavy 30 hubs", 330, StarHeavy(30, 300, 0.4, rng)});
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 9u, 16u, 33u}) cases.push_back({"clique " + std::to_string(n), n, Clique(n)});
  cases.push_back({"star 2", 2, Star(2)});
  cases.push_back({"star 50", 50, Star(50)});
  cases.push_back({"star 50 relabelled", 50, Shuffled(50, Star(50), rng)});
  cases.push_back({"path 2", 2, Path(2)});
  cases.push_back({"path 3", 3, Path(3)});
  cases.push_back({"path 64", 64, Path(64)});
  cases.push_back({"path 64 relabelled", 64, Shuffled(64, Path(64), rng)});
  cases.push_back({"edgeless 0", 0, {}});
  cases.push_back({"edgeless 1", 1, {}});
  cases.push_back({"edgeless 7", 7, {}});
  {
    // A random graph on the first 40 of 100 vertices, plus a 7-clique among
    // the last vertices: isolated vertices in the middle of the numbering.
    Edges edges = ErdosRenyi(40, 0.2, rng);
    for (uint32_t u = 93; u < 100; ++u)
      for (uint32_t v = u + 1; v < 100; ++v) edges.push_back({u, v});
    cases.push_back({"isolated vertices", 100, edges});
    cases.push_back({"isolated vertices relabelled", 100, Shuffled(100, edges, rng)});
  }
  return cases;
}

// ---------------------------------------------------------------------------
// What one Threshold() run must satisfy, with `optimum` from Exact().

void ExpectThresholdRun(const Trimming& start, const Trimming& result, const ThresholdStats& s, uint32_t optimum,
                        uint32_t known_infeasible, const std::string& where) {
  SCOPED_TRACE(where);
  const TrimGraph& g = result.graph();
  EXPECT_EQ(result.CheckInvariant(true), "");
  EXPECT_EQ(result.max_workload(), optimum);
  const std::vector<uint32_t>& wl = result.workloads();
  EXPECT_EQ(std::accumulate(wl.begin(), wl.end(), uint64_t{0}), g.num_edges());

  ASSERT_FALSE(s.rounds.empty());
  ASSERT_FALSE(s.thresholds.empty());
  EXPECT_EQ(s.rounds.back().max_after, result.max_workload());

  // Per round, and the maximum across the whole run (all drains).
  uint64_t messages = 0, reversals = 0;
  uint32_t previous_max = start.max_workload();
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    const ThresholdRound& r = s.rounds[i];
    SCOPED_TRACE("round " + std::to_string(i) + " at T " + std::to_string(r.threshold));
    EXPECT_LE(r.max_after, previous_max) << "the maximum rose";
    previous_max = r.max_after;
    EXPECT_LE(r.root_relief, r.reversals);
    // The first reversal of a round climbs through relays that have not
    // forwarded anything yet, so it always reaches its root.
    if (r.reversals > 0) {
      EXPECT_GE(r.root_relief, 1u);
    }
    // A sink may accept several searches (one per sender), so reversals are
    // bounded by the searches, not by the devices reached.
    EXPECT_LE(r.reversals, r.messages / 2) << "each reversal answers a search of its own";
    EXPECT_LE(r.longest_path, r.depth + 1)
        << "a reversal follows the search tree upwards from the device a sink took an edge from";
    EXPECT_EQ(r.still_over, r.max_after > r.threshold);
    EXPECT_EQ(r.messages % 2, 0u) << "every search has its echo";
    if (r.roots == 0) {
      EXPECT_EQ(r.messages, 0u);
      EXPECT_EQ(r.reversals, 0u);
      EXPECT_FALSE(r.still_over);
    }
    messages += r.messages;
    reversals += r.reversals;
  }
  EXPECT_EQ(s.messages, messages);
  EXPECT_EQ(s.reversals, reversals);

  // Cut the rounds into drains: a drain ends when it is feasible or when a
  // round relieved no root (stuck). Replaying the schedule with those
  // outcomes must give exactly the thresholds the run used.
  ThresholdSchedule replay(known_infeasible);
  size_t drain = 0;
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    const ThresholdRound& r = s.rounds[i];
    ASSERT_LT(drain, s.thresholds.size()) << "round " << i << " after the last drain";
    EXPECT_EQ(r.threshold, s.thresholds[drain]) << "round " << i;
    const bool feasible = !r.still_over;
    const bool stuck = r.still_over && r.root_relief == 0;
    if (!feasible && !stuck) continue;
    ASSERT_FALSE(replay.done()) << "drain " << drain << " after the schedule was done";
    EXPECT_EQ(replay.threshold(), s.thresholds[drain]) << "drain " << drain;
    // Independent of the method: a feasible drain at T shows an orientation
    // with maximum <= T, and a stuck one must be a proof the optimum is
    // above T.
    if (feasible) {
      EXPECT_GE(r.threshold, optimum) << "drain " << drain << " feasible below the optimum";
    } else {
      EXPECT_LT(r.threshold, optimum) << "drain " << drain << " stuck at or above the optimum";
    }
    replay.OnDrainEnded(feasible);
    ++drain;
  }
  EXPECT_EQ(drain, s.thresholds.size()) << "the last round did not end a drain";
  EXPECT_TRUE(replay.done());
  // The schedule's answer is the lowest feasible threshold; an edgeless
  // graph is feasible at the first threshold, 1, with maximum 0.
  EXPECT_EQ(replay.optimum(), std::max(optimum, 1u));
  EXPECT_LE(s.thresholds.size(), DrainBound(optimum));
  EXPECT_GT(s.thresholds.front(), known_infeasible);

  // The server's DrainController, fed each round's outcome as the devices
  // would report it, must ask for the same threshold at every step and be
  // done exactly after the last round.
  DrainController controller(known_infeasible);
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    ASSERT_FALSE(controller.done()) << "round " << i;
    EXPECT_EQ(controller.step(), i + 1);
    EXPECT_EQ(controller.threshold(), s.rounds[i].threshold) << "round " << i;
    controller.EndStep(s.rounds[i].still_over, s.rounds[i].root_relief);
  }
  EXPECT_TRUE(controller.done());
  EXPECT_EQ(controller.schedule().optimum(), replay.optimum());
}

// The runs here need fewer than 100 rounds; the default safety net (2^20
// rounds, each with the invariant check) would turn a regression that never
// converges into a test that hangs instead of one that fails.
constexpr uint32_t kRoundLimit = 10000;

// Every edge kept by endpoint a: the first vertices of the numbering start
// far above the optimum.
Trimming AllKeptByA(const TrimGraph& g) { return Trimming(g); }

TEST(LumosThresholdTest, ReachesTheExactOptimumOnManyGraphsStartsAndSeeds) {
  std::mt19937_64 rng(77);
  for (const GraphCase& c : Cases()) {
    const TrimGraph g(c.n, c.edges);
    ASSERT_TRUE(g.valid()) << c.name << ": " << g.error();
    const Trimming greedy = Greedy(g);
    const uint32_t optimum = Exact(greedy).max_workload();
    ASSERT_EQ(Exact(AllKeptByA(g)).max_workload(), optimum) << c.name;
    // Greedy (with its log-degree ties kept by both endpoints), every edge
    // with endpoint a, and a random orientation.
    Trimming random_start(g);
    for (uint64_t e = 0; e < g.num_edges(); ++e) random_start.Set(e, rng() & 1 ? Keeper::kA : Keeper::kB);
    const std::vector<std::pair<const char*, Trimming>> starts = {
        {"greedy start", greedy}, {"all-a start", AllKeptByA(g)}, {"random start", random_start}};
    // Without a hint, and with the job's hint (the whole graph's density).
    const uint32_t hint = KnownInfeasible(g.num_edges(), g.num_vertices());
    if (g.num_edges() > 0) {
      EXPECT_LT(hint, optimum) << c.name;
    } else {
      EXPECT_EQ(hint, 0u) << c.name;
    }
    for (const auto& [start_name, start] : starts) {
      for (uint64_t seed : {1u, 2u, 3u, 17u}) {
        for (const uint32_t known : {0u, hint}) {
          ThresholdStats stats;
          const Trimming result = Threshold(
              start, {.seed = seed, .check_invariant = true, .max_rounds = kRoundLimit, .known_infeasible = known},
              &stats);
          ExpectThresholdRun(start, result, stats, optimum, known,
                             c.name + ", " + start_name + ", seed " + std::to_string(seed) + ", known infeasible " +
                                 std::to_string(known));
        }
      }
    }
  }
}

TEST(LumosThresholdTest, ReachesTheOptimumOnEveryGraphOnFiveVertices) {
  // All 1024 labelled graphs on 5 vertices: small enough for every corner
  // (ties everywhere under greedy, isolated vertices, disconnected parts).
  const Edges all = Clique(5);
  for (uint32_t mask = 0; mask < (1u << all.size()); ++mask) {
    Edges edges;
    for (size_t i = 0; i < all.size(); ++i)
      if ((mask >> i) & 1) edges.push_back(all[i]);
    const TrimGraph g(5, edges);
    const Trimming greedy = Greedy(g);
    const uint32_t optimum = Exact(greedy).max_workload();
    for (const bool from_greedy : {true, false}) {
      const Trimming start = from_greedy ? greedy : AllKeptByA(g);
      ThresholdStats stats;
      const Trimming result =
          Threshold(start, {.seed = mask, .check_invariant = true, .max_rounds = kRoundLimit}, &stats);
      ExpectThresholdRun(start, result, stats, optimum, 0,
                         "graph mask " + std::to_string(mask) + (from_greedy ? ", greedy start" : ", all-a start"));
      if (HasFailure()) return;  // one graph's report is enough
    }
  }
}

TEST(LumosThresholdTest, GreedyTiesAreDroppedByTheLowerEndpoint) {
  // A single edge: both endpoints have degree 1 (log-degree 0), a tie, so
  // greedy keeps it in both trees; the lower endpoint 0 must drop it before
  // any drain, which leaves nothing above T = 1.
  const TrimGraph g(2, {{0, 1}});
  const Trimming greedy = Greedy(g);
  ASSERT_EQ(greedy.keeper(0), Keeper::kBoth);
  ThresholdStats stats;
  const Trimming t = Threshold(greedy, {.check_invariant = true}, &stats);
  EXPECT_EQ(t.keeper(0), Keeper::kB);
  EXPECT_EQ(t.workloads(), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(stats.thresholds, (std::vector<uint32_t>{1}));
  ASSERT_EQ(stats.rounds.size(), 1u);
  EXPECT_EQ(stats.rounds[0].roots, 0u);
}

// Worked by hand. The 4-cycle 0-1-3-2-0 with every edge kept by its lower
// endpoint: loads 2, 1, 1, 0, optimum 1. The drain at T = 1: root 0 searches
// 1 and 2 (load 1 = T: relays), both search 3 (load 0: the sink; the second
// search reaches it already taken). One reversal 3 -> relay -> 0 of two
// edges ends feasible with every load 1.
TEST(LumosThresholdTest, CountsOnAFourCycle) {
  const TrimGraph g(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  ThresholdStats s;
  const Trimming t = Threshold(Trimming(g), {.check_invariant = true}, &s);
  EXPECT_EQ(t.workloads(), (std::vector<uint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(s.thresholds, (std::vector<uint32_t>{1}));
  ASSERT_EQ(s.rounds.size(), 1u);
  const ThresholdRound& r = s.rounds[0];
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.reached, 3u);
  EXPECT_EQ(r.messages, 8u);  // 0->1, 0->2, 1->3, 2->3 and their echoes
  EXPECT_EQ(r.reversals, 1u);
  EXPECT_EQ(r.root_relief, 1u);
  EXPECT_EQ(r.longest_path, 2u);
  EXPECT_EQ(r.depth, 2u);
  EXPECT_EQ(r.max_after, 1u);
  EXPECT_FALSE(r.still_over);
}

// A star whose centre keeps all 6 edges: at T = 1 every leaf is a sink, all
// six reversals reach the root, and the centre drains to 0 (below T: the
// protocol does not stop a root at T).
TEST(LumosThresholdTest, CountsOnAStarDrainedFromItsCentre) {
  const TrimGraph g(7, Star(7));
  ThresholdStats s;
  const Trimming t = Threshold(Trimming(g), {.check_invariant = true}, &s);
  EXPECT_EQ(t.workloads(), (std::vector<uint32_t>{0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(s.thresholds, (std::vector<uint32_t>{1}));
  ASSERT_EQ(s.rounds.size(), 1u);
  EXPECT_EQ(s.rounds[0].reversals, 6u);
  EXPECT_EQ(s.rounds[0].root_relief, 6u);
  EXPECT_EQ(s.rounds[0].longest_path, 1u);
  EXPECT_EQ(s.messages, 12u);
}

// K4 (optimum ceil(6/4) = 2) from loads 3, 2, 1, 0: the drain at 1 must end
// stuck, the one at 2 feasible, and the schedule stops there.
TEST(LumosThresholdTest, StuckThenFeasibleOnK4) {
  const TrimGraph g(4, Clique(4));
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    ThresholdStats s;
    const Trimming t = Threshold(Trimming(g), {.seed = seed, .check_invariant = true, .max_rounds = kRoundLimit}, &s);
    EXPECT_EQ(t.max_workload(), 2u) << "seed " << seed;
    EXPECT_EQ(s.thresholds, (std::vector<uint32_t>{1, 2})) << "seed " << seed;
  }
}

TEST(LumosThresholdTest, IsReproducibleFromItsSeed) {
  std::mt19937_64 rng(8);
  const TrimGraph g(150, PreferentialAttachment(150, 3, rng));
  ThresholdStats a, b;
  const Trimming ta = Threshold(Greedy(g), {.seed = 5}, &a);
  const Trimming tb = Threshold(Greedy(g), {.seed = 5}, &b);
  EXPECT_EQ(ta.workloads(), tb.workloads());
  EXPECT_EQ(a.thresholds, b.thresholds);
  EXPECT_EQ(a.rounds.size(), b.rounds.size());
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.reversals, b.reversals);
}

TEST(LumosThresholdTest, StatsArgumentIsOptionalAndResetEachRun) {
  const TrimGraph g(5, Clique(5));
  EXPECT_EQ(Threshold(Trimming(g)).max_workload(), 2u);
  ThresholdStats s;
  s.thresholds = {99, 98};
  s.messages = 12345;
  Threshold(Trimming(g), {}, &s);
  EXPECT_EQ(s.thresholds.front(), 1u);
  uint64_t messages = 0;
  for (const ThresholdRound& r : s.rounds) messages += r.messages;
  EXPECT_EQ(s.messages, messages);
}

}  // namespace
}  // namespace nodefl::server::lumos
