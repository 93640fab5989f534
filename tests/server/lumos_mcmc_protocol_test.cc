// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-mcmc job end to end in one process (lumos_mcmc_fleet.h): the
// server's LumosMcmcJob and the devices' LumosMcmcRole over a network that
// delivers in random order. Lumos Alg. 2 and 3 run on secure comparisons
// only; the tests hold them to the devices' true state: the device Alg. 3
// picks holds the maximum workload, Eq. 18 is told the true sign of
// f(X') - f(X), a rejected move is undone, and every edge stays kept by an
// endpoint after every delivery, also when devices leave mid-job.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "lumos_mcmc_fleet.h"

namespace nodefl::lumos {
namespace {

using mcmc_fleet::McmcFleet;
using mcmc_fleet::McmcFleetOptions;
namespace jobs = server::jobs;

fleet::Graph RandomGraph(uint32_t n, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(p);
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t a = 0; a < n; ++a) {
    for (uint32_t b = a + 1; b < n; ++b) {
      if (coin(rng)) e.push_back({a, b});
    }
  }
  return fleet::MakeGraph(n, e);
}

std::string Errors(const McmcFleet& f) {
  std::string out;
  for (const std::string& e : f.errors()) out += e + "\n";
  return out;
}

// Every iteration as the server recorded it against what the fleet saw.
void ExpectFaithfulChain(const McmcFleet& f) {
  const auto& its = f.job().iterations();
  const auto& moves = f.moves();
  size_t m = 0;
  for (const jobs::LumosMcmcIteration& it : its) {
    ASSERT_LT(m, moves.size()) << "iteration " << it.iteration << " without a move record";
    const mcmc_fleet::ObservedMove& seen = moves[m++];
    ASSERT_EQ(seen.iteration, it.iteration);
    EXPECT_EQ(seen.u, it.u);
    // Alg. 2 line 2 through Alg. 3: the picked device holds the maximum.
    EXPECT_EQ(seen.u_workload, seen.true_max_before) << "iteration " << it.iteration;
    if (it.outcome == jobs::LumosMcmcOutcome::kSkipped) {
      EXPECT_EQ(it.moved, 0u);
      continue;
    }
    ASSERT_TRUE(seen.done) << "iteration " << it.iteration;
    // Line 7: the sign of f(X') - f(X) the server acted on is the truth.
    const int truth = seen.true_max_after > seen.true_max_before    ? jobs::kDeltaHigher
                      : seen.true_max_after == seen.true_max_before ? jobs::kDeltaEqual
                                                                    : jobs::kDeltaLower;
    EXPECT_EQ(it.delta_class, truth) << "iteration " << it.iteration;
    EXPECT_LE(seen.true_max_after, seen.true_max_before + 1);  // one move adds at most one anywhere
    EXPECT_EQ(it.accepted, it.outcome != jobs::LumosMcmcOutcome::kRejectedHigher &&
                               it.outcome != jobs::LumosMcmcOutcome::kRejectedAborted);
    if (it.delta_class != jobs::kDeltaHigher) {
      EXPECT_TRUE(it.accepted) << "iteration " << it.iteration;
    }
  }
  EXPECT_EQ(m, moves.size());
}

TEST(LumosMcmcProtocolTest, RandomGraphsRunAlg2FaithfullyOnSecureComparisons) {
  // One graph: 5 iterations of some 100 secure comparisons each (490 in
  // all, about 14 CPU-seconds). A second random graph added 730 more
  // comparisons and no outcome the first does not reach (both accept all
  // five moves; lumos_mcmc_job_test reaches the rejections, the cases
  // below the departures).
  const uint64_t seed = 1;
  const fleet::Graph g = RandomGraph(16, 0.25, seed);
  McmcFleetOptions o;
  o.seed = seed;
  o.iterations = 5;
  McmcFleet f(g, o);
  ASSERT_TRUE(f.Run());
  EXPECT_TRUE(f.errors().empty()) << Errors(f);
  const jobs::LumosMcmcSummary& s = f.job().summary();
  EXPECT_TRUE(f.job().succeeded()) << s.error << " " << s.stop_reason;
  EXPECT_EQ(s.iterations_run, 5u);
  EXPECT_TRUE(s.stop_reason.empty()) << s.stop_reason;
  EXPECT_EQ(s.sessions_aborted, 0u);
  EXPECT_EQ(s.uncovered_edges, 0u);
  EXPECT_EQ(s.accepted + s.rejected + s.skipped, 5u);
  ExpectFaithfulChain(f);
  // What the devices uploaded is what they hold.
  const auto kept = f.job().Kept();
  uint32_t max_workload = 0;
  for (uint32_t v = 0; v < g.n; ++v) {
    std::vector<uint32_t> want;
    for (const McmcPeer& p : f.role(v).peers()) {
      if (p.keep) want.push_back(p.id);
    }
    ASSERT_EQ(kept.count(v), 1u) << v;
    EXPECT_EQ(kept.at(v), want) << v;
    max_workload = std::max<uint32_t>(max_workload, static_cast<uint32_t>(want.size()));
  }
  EXPECT_EQ(s.max_workload, max_workload);
  // Every comparison the job counted ran on the devices.
  uint64_t per_iteration = 0;
  for (const auto& it : f.job().iterations()) per_iteration += it.comparisons;
  EXPECT_EQ(per_iteration, s.comparisons);
  EXPECT_GT(f.coverage_checks(), 500u);
}

TEST(LumosMcmcProtocolTest, AClique5ShedsTheEdgesAlg1KeepsTwice) {
  // K5: every log-degree ties, so Alg. 1 keeps every edge at both ends
  // (workload 4 everywhere; the optimum is 2). The first move gives one
  // edge (k in 1..round(ln 4) = 1) to a neighbour that keeps it already:
  // the maximum stays 4 (delta 0) and Eq. 18 accepts. No move can lift a
  // device above 4.
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t a = 0; a < 5; ++a) {
    for (uint32_t b = a + 1; b < 5; ++b) e.push_back({a, b});
  }
  const fleet::Graph g = fleet::MakeGraph(5, e);
  McmcFleetOptions o;
  o.iterations = 6;
  o.seed = 4;
  McmcFleet f(g, o);
  ASSERT_TRUE(f.Run());
  EXPECT_TRUE(f.errors().empty()) << Errors(f);
  const jobs::LumosMcmcSummary& s = f.job().summary();
  EXPECT_EQ(s.greedy_max, 4u);
  ASSERT_EQ(f.job().iterations().size(), 6u);
  const jobs::LumosMcmcIteration& first = f.job().iterations()[0];
  EXPECT_EQ(first.moved, 1u);
  EXPECT_EQ(first.delta_class, jobs::kDeltaEqual);
  EXPECT_TRUE(first.accepted);
  EXPECT_LE(s.max_workload, 4u);
  uint32_t total = 0;
  for (uint32_t v = 0; v < 5; ++v) total += f.role(v).workload();
  EXPECT_LT(total, 20u);  // edges kept twice were shed
  EXPECT_GE(total, 10u);  // and every edge is still kept
  ExpectFaithfulChain(f);
}

TEST(LumosMcmcProtocolTest, TheMoverLeavingStopsTheIterationsWithEveryEdgeCovered) {
  const fleet::Graph g = RandomGraph(14, 0.3, 7);
  McmcFleetOptions o;
  o.seed = 7;
  o.iterations = 4;
  o.kill_mover_at = 2;
  McmcFleet f(g, o);
  ASSERT_TRUE(f.Run());
  EXPECT_TRUE(f.errors().empty()) << Errors(f);  // no edge uncovered at any delivery
  const jobs::LumosMcmcSummary& s = f.job().summary();
  EXPECT_FALSE(s.stop_reason.empty());
  EXPECT_LT(s.iterations_run, 4u);
  EXPECT_EQ(s.uncovered_edges, 0u);
  ASSERT_EQ(f.killed().size(), 1u);
  EXPECT_FALSE(s.absent.empty());
}

TEST(LumosMcmcProtocolTest, AnotherDeviceLeavingAbortsItsComparisonsAndTheChainGoesOn) {
  const fleet::Graph g = RandomGraph(14, 0.3, 9);
  McmcFleetOptions o;
  o.seed = 9;
  o.iterations = 3;
  o.kill_other_at = 2;
  McmcFleet f(g, o);
  ASSERT_TRUE(f.Run());
  EXPECT_TRUE(f.errors().empty()) << Errors(f);
  const jobs::LumosMcmcSummary& s = f.job().summary();
  ASSERT_EQ(f.killed().size(), 1u);
  EXPECT_EQ(s.uncovered_edges, 0u);
  std::string chain;
  for (const auto& it : f.job().iterations()) {
    chain += std::to_string(it.iteration) + ":u" + std::to_string(it.u) + ":" +
             std::string(jobs::LumosMcmcOutcomeName(it.outcome)) + " ";
  }
  EXPECT_EQ(s.iterations_run, 3u) << s.stop_reason << " " << chain;
  // The server found it unreachable: it takes no further part.
  const uint32_t gone = *f.killed().begin();
  EXPECT_NE(std::find(s.absent.begin(), s.absent.end(), gone), s.absent.end());
  EXPECT_EQ(f.job().Kept().count(gone), 0u);
}

}  // namespace
}  // namespace nodefl::lumos
