// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RunWalkStep (walk_step.h): the walk semantics of walk_format.h step by
// step, the draws against a replica DRBG, and whole walks through many
// simulated devices: every walk carries exactly l entries, every hop goes
// to a neighbour or a pool member, the predictor fires with frequency p
// (binomial bound), and the number of device-to-device messages per walk
// has Theorem 4.2's mean (Eq. 19) within a bound derived from its exact
// variance.
#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/fedwalk/walk_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "fedwalk_walk_graph.h"
#include "heap_counter.h"
#include "nodefl/core/little_endian.h"
#include "stat_util.h"

namespace nodefl::fedwalk {
namespace {

using testing::WalkWorld;

constexpr uint64_t kSeed = 4242;

struct Walk {
  WalkHeader header;
  std::vector<uint8_t> ids;
  explicit Walk(uint16_t length, uint32_t capacity = 0) : ids(4 * (capacity == 0 ? length : capacity), 0) {
    header.remaining = length;
    header.walk_id = 77;
  }
  uint32_t At(size_t i) const { return WalkIdAt(ids, i); }
};

Result<WalkStepResult> Step(const WalkStepContext& c, Walk& w, Drbg& rng, size_t pool_capacity = 256) {
  std::vector<uint32_t> pool(pool_capacity);
  Result<WalkStepResult> r = Status::Internal();
  NODEFL_EXPECT_NO_HEAP(r = RunWalkStep(c, &w.header, w.ids, rng, pool));
  return r;
}

TEST(WalkStepTest, ForwardsToANeighbourAndAppendsItsEncoding) {
  const WalkWorld world = WalkWorld::Make(30, 3, 10, 1);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(kSeed).ok());
  const WalkStepContext c = world.Context(5, 0.0);
  Walk w(10);
  Result<WalkStepResult> r = Step(c, w, rng);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->hop, WalkHop::kNeighbour);
  EXPECT_EQ(r->encodings, 1u);
  EXPECT_FALSE(r->predictor_triggered);
  EXPECT_EQ(w.header.count, 1);
  EXPECT_EQ(w.header.remaining, 9);
  EXPECT_EQ(w.header.hops, 1);
  EXPECT_EQ(w.header.flags, 0);
  EXPECT_EQ(w.header.walk_id, 77u);
  // Identity codebook: the entry is the neighbour the walk goes to.
  EXPECT_EQ(w.At(0), r->destination);
  EXPECT_EQ(world.adjacency[5].count(r->destination), 1u);
}

TEST(WalkStepTest, DrawsMatchAReplica) {
  // A codebook whose rows really randomise (not the identity), so the
  // replica checks Enc() goes through SampleCodebookRow with the same
  // stream, in the documented order.
  WalkWorld world = WalkWorld::Make(40, 4, 20, 2);
  for (uint32_t v = 0; v < world.n; ++v) {
    world.codebook[2 * v] = CodebookEntry{(v + 1) % world.n, kQ31One / 3, 1};
    world.codebook[2 * v + 1] = CodebookEntry{(v + 7) % world.n, kQ31One / 5, 0};
  }
  const uint32_t me = 11;
  const WalkStepContext c = world.Context(me, 0.5);
  Drbg rng, replica;
  ASSERT_TRUE(rng.SeedDeterministic(kSeed, 3).ok());
  ASSERT_TRUE(replica.SeedDeterministic(kSeed, 3).ok());
  for (int trial = 0; trial < 200; ++trial) {
    Walk w(20);
    w.header.flags = trial % 2 == 0 ? kSelfEncodeFirst : 0;
    w.header.remaining = static_cast<uint16_t>(w.header.flags != 0 ? 19 : 20);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    // Replay: [Enc(me)], neighbour index, Enc(u), coin, [pool index].
    std::vector<uint32_t> want;
    if (trial % 2 == 0) want.push_back(*SampleCodebookRow(world.Row(me), replica));
    const uint64_t k = replica.UniformBelow(world.neighbours[me].size());
    const uint32_t u = world.neighbours[me][k].id;
    want.push_back(*SampleCodebookRow(world.Row(u), replica));
    uint32_t next = u;
    if (replica.Bernoulli(0.5)) {
      const std::vector<uint32_t> pool = world.PoolOf(me, u, 256);
      if (!pool.empty()) next = pool[replica.UniformBelow(pool.size())];
    }
    ASSERT_EQ(w.header.count, want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(w.At(i), want[i]) << trial;
    EXPECT_EQ(r->destination, next);
    EXPECT_EQ(r->encodings, want.size());
  }
}

TEST(WalkStepTest, SelfEncodingAndEndings) {
  const WalkWorld world = WalkWorld::Make(30, 3, 10, 3);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(kSeed, 1).ok());
  WalkStepContext c = world.Context(4, 0.0);
  {
    // kSelfEncodeFirst: Enc(own) first, then Enc(u); flag cleared.
    Walk w(10);
    w.header.flags = kSelfEncodeFirst;
    w.header.remaining = 6;
    w.header.count = 3;
    const uint32_t length = WalkLength(w.header);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->encodings, 2u);
    EXPECT_EQ(w.header.count, 5);
    EXPECT_EQ(w.At(3), 4u);
    EXPECT_EQ(w.header.flags, 0);
    EXPECT_EQ(w.header.remaining, 5);
    EXPECT_EQ(WalkLength(w.header) + 0u, length);  // constant across a step
  }
  {
    // The last entry: complete, to the server, remaining 0, no hop.
    Walk w(1);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hop, WalkHop::kServer);
    EXPECT_EQ(r->outcome, WalkOutcome::kComplete);
    EXPECT_EQ(w.header.count, 1);
    EXPECT_EQ(w.header.remaining, 0);
    EXPECT_EQ(w.header.hops, 0);
  }
  {
    // No own row for the flag: dropped, walk unchanged, nothing drawn.
    WalkStepContext no_own = c;
    no_own.own_row = {};
    Walk w(10);
    w.header.flags = kSelfEncodeFirst;
    w.header.remaining = 9;
    Result<WalkStepResult> r = Step(no_own, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hop, WalkHop::kServer);
    EXPECT_EQ(r->outcome, WalkOutcome::kDropped);
    EXPECT_EQ(r->encodings, 0u);
    EXPECT_EQ(w.header.count, 0);
    EXPECT_EQ(w.header.flags, kSelfEncodeFirst);
  }
  {
    // No walk neighbours: dead end after the owed own entry.
    std::vector<HctNeighbour> none = world.neighbours[4];
    for (HctNeighbour& n : none) n.has_codebook_row = false;
    WalkStepContext lonely = c;
    lonely.neighbours = none;
    lonely.walk_neighbours = CountWalkNeighbours(none);
    EXPECT_EQ(lonely.walk_neighbours, 0u);
    Walk w(10);
    w.header.flags = kSelfEncodeFirst;
    w.header.remaining = 9;
    Result<WalkStepResult> r = Step(lonely, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->outcome, WalkOutcome::kDeadEnd);
    EXPECT_EQ(r->encodings, 1u);
    EXPECT_EQ(w.header.count, 1);
  }
  {
    // Malformed walks and short buffers: refused, unchanged.
    Walk w(10, 9);  // capacity 9 < length 10
    EXPECT_EQ(Step(c, w, rng).status(), Status::InvalidArgument());
    EXPECT_EQ(w.header.count, 0);
    Walk zero(10);
    zero.header.remaining = 0;
    EXPECT_EQ(Step(c, zero, rng).status(), Status::InvalidArgument());
    Walk flags(10);
    flags.header.flags = 0x80;
    EXPECT_EQ(Step(c, flags, rng).status(), Status::InvalidArgument());
  }
  {
    // A corrupt row (alias out of range) is an error, not an entry.
    std::vector<HctNeighbour> one = {world.neighbours[4][0]};
    std::vector<CodebookEntry> bad = {CodebookEntry{1, 0, 5}};
    one[0].codebook_offset = 0;
    one[0].codebook_count = 1;
    WalkStepContext corrupt = c;
    corrupt.neighbours = one;
    corrupt.walk_neighbours = 1;
    corrupt.codebook_pool = bad;
    Walk w(10);
    EXPECT_EQ(Step(corrupt, w, rng).status(), Status::DataLoss());
    EXPECT_EQ(w.header.count, 0);
  }
}

// me's neighbour records with every per-bin estimate at -0.4 (each rounds
// to no neighbour in any bin).
std::vector<HctNeighbour> WithEstimatesBelowZero(const WalkWorld& world, uint32_t me) {
  std::vector<HctNeighbour> flat = world.neighbours[me];
  for (HctNeighbour& n : flat) {
    for (uint32_t i = 0; i < world.bins; ++i) StoreF32Le(-0.4f, n.row_bytes + 4 * i);
  }
  return flat;
}

TEST(WalkStepTest, PredictorJumpsIntoThePoolAndFallsBackWhenItIsEmpty) {
  const WalkWorld world = WalkWorld::Make(60, 4, 30, 4);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(kSeed, 2).ok());
  const uint32_t me = 17;
  WalkStepContext c = world.Context(me, 1.0);
  for (int trial = 0; trial < 100; ++trial) {
    Walk w(10);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->predictor_triggered);
    ASSERT_EQ(r->hop, WalkHop::kPredicted);
    const uint32_t u = w.At(0);
    const std::vector<uint32_t> pool = world.PoolOf(me, u, 256);
    EXPECT_EQ(r->pool_size, pool.size());
    EXPECT_NE(std::find(pool.begin(), pool.end(), r->destination), pool.end());
    EXPECT_NE(r->destination, me);
    EXPECT_NE(r->destination, u);
    EXPECT_EQ(w.header.remaining, 8);
    EXPECT_EQ(w.header.flags, kSelfEncodeFirst);
    EXPECT_EQ(w.header.hops, 1);
  }
  {
    // remaining 2: the predictor is never tried (Alg. 1: l > 2).
    Walk w(2);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->predictor_triggered);
    EXPECT_EQ(r->hop, WalkHop::kNeighbour);
    EXPECT_EQ(w.header.remaining, 1);
  }
  {
    // All of u's estimates <= 0: empty pool, step 5.
    const std::vector<HctNeighbour> flat = WithEstimatesBelowZero(world, me);
    WalkStepContext empty_pool = c;
    empty_pool.neighbours = flat;
    Walk w(10);
    Result<WalkStepResult> r = Step(empty_pool, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->predictor_triggered);
    EXPECT_EQ(r->pool_size, 0u);
    EXPECT_EQ(r->hop, WalkHop::kNeighbour);
    EXPECT_EQ(w.header.remaining, 9);
  }
  {
    // No tree: step 5 as well.
    WalkStepContext no_tree = c;
    no_tree.tree = nullptr;
    Walk w(10);
    Result<WalkStepResult> r = Step(no_tree, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hop, WalkHop::kNeighbour);
  }
  {
    // A pool buffer of one: the single nearest candidate.
    Walk w(10);
    Result<WalkStepResult> r = Step(c, w, rng, 1);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->pool_size, 1u);
    EXPECT_EQ(r->destination, world.PoolOf(me, w.At(0), 1).at(0));
  }
}

// kNeighbours' candidates for a jump from `me` past u: me's other
// neighbours in bins where u has neighbours, else all of me's others.
std::vector<uint32_t> NeighbourCandidates(const WalkWorld& world, uint32_t me, uint32_t u) {
  std::vector<bool> u_has(world.bins, false);
  for (uint32_t x : world.adjacency[u]) u_has[world.plan[x]] = true;
  std::vector<uint32_t> in_bins, all;
  for (uint32_t w : world.adjacency[me]) {
    if (w == u) continue;
    all.push_back(w);
    if (u_has[world.plan[w]]) in_bins.push_back(w);
  }
  return in_bins.empty() ? all : in_bins;
}

TEST(WalkStepTest, NeighbourPredictorJumpsUniformlyToAnotherNeighbourInUsBins) {
  const WalkWorld world = WalkWorld::Make(60, 4, 30, 4);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(kSeed, 3).ok());
  const uint32_t me = 17;
  WalkStepContext c = world.Context(me, 1.0);
  c.predictor = JumpPredictor::kNeighbours;
  c.tree = nullptr;  // not needed by this predictor
  std::map<uint32_t, std::map<uint32_t, double>> picks;  // u -> destination -> count
  std::map<uint32_t, double> per_u;
  constexpr int kTrials = 20000;
  for (int trial = 0; trial < kTrials; ++trial) {
    Walk w(10);
    Result<WalkStepResult> r = Step(c, w, rng);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->hop, WalkHop::kPredicted);
    const uint32_t u = w.At(0);
    const std::vector<uint32_t> candidates = NeighbourCandidates(world, me, u);
    ASSERT_EQ(r->pool_size, candidates.size());
    ASSERT_NE(std::find(candidates.begin(), candidates.end(), r->destination), candidates.end()) << r->destination;
    EXPECT_EQ(world.adjacency[me].count(r->destination), 1u);  // a neighbour: its key is already there
    EXPECT_EQ(w.header.remaining, 8);
    EXPECT_EQ(w.header.flags, kSelfEncodeFirst);
    picks[u][r->destination] += 1;
    per_u[u] += 1;
  }
  // Uniform among the candidates, for every u (Pearson over all cells).
  std::vector<double> observed, expected;
  for (const auto& [u, counts] : picks) {
    const std::vector<uint32_t> candidates = NeighbourCandidates(world, me, u);
    for (uint32_t w : candidates) {
      observed.push_back(counts.count(w) != 0 ? counts.at(w) : 0.0);
      expected.push_back(per_u[u] / static_cast<double>(candidates.size()));
      ASSERT_GE(expected.back(), 5.0);
    }
  }
  const int df = static_cast<int>(observed.size() - picks.size());
  ASSERT_GT(df, 0);
  EXPECT_LT(nodefl::testing::ChiSquareStatistic(observed, expected), nodefl::testing::ChiSquareCritical(df));
  {
    // u's counts all round to 0: every other neighbour is a candidate.
    const std::vector<HctNeighbour> flat = WithEstimatesBelowZero(world, me);
    WalkStepContext unfiltered = c;
    unfiltered.neighbours = flat;
    Walk w(10);
    Result<WalkStepResult> r = Step(unfiltered, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hop, WalkHop::kPredicted);
    EXPECT_EQ(r->pool_size, world.adjacency[me].size() - 1);
  }
  {
    // A device whose only neighbour is u has nobody to jump to: step 5.
    const WalkWorld path = WalkWorld::FromGraph(4, 1, {{1, 2}, {2, 3}}, {kAbsentBin, 0, 0, 0}, {1, 2, 3},
                                                {{0, 1, 1.0f}, {3, 2, 2.0f}});
    WalkStepContext leaf = path.Context(1, 1.0);
    leaf.predictor = JumpPredictor::kNeighbours;
    Walk w(10);
    Result<WalkStepResult> r = Step(leaf, w, rng);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->predictor_triggered);
    EXPECT_EQ(r->pool_size, 0u);
    EXPECT_EQ(r->hop, WalkHop::kNeighbour);
    EXPECT_EQ(r->destination, 2u);
  }
}

// ---- Whole walks through many devices -------------------------------------------------------

struct WalkRun {
  uint64_t walks = 0;
  double message_sum = 0, message_sq = 0;
  uint64_t eligible_steps = 0;  // remaining > 2 before the step
  uint64_t triggered = 0;
  uint64_t empty_pools = 0;
  uint64_t predicted_hops = 0;
  uint32_t min_messages = UINT32_MAX, max_messages = 0;
};

// Runs `walks` walks of length l from random starts through the real step,
// checking every hop; the walk moves from device to device as the step
// says.
WalkRun RunWalks(const WalkWorld& world, uint16_t l, double p, uint64_t walks, uint64_t seed) {
  std::vector<WalkStepContext> contexts;
  for (uint32_t v = 0; v < world.n; ++v) contexts.push_back(world.Context(v, p));
  Drbg rng;  // one stream: the devices' draws are independent either way
  EXPECT_TRUE(rng.SeedDeterministic(seed).ok());
  std::vector<uint32_t> pool(256);
  WalkRun run;
  for (uint64_t i = 0; i < walks; ++i) {
    Walk w(l);
    uint32_t device = static_cast<uint32_t>(rng.UniformBelow(world.n));
    uint32_t messages = 0;
    for (;;) {
      const WalkHeader before = w.header;
      const Result<WalkStepResult> r = RunWalkStep(contexts[device], &w.header, w.ids, rng, pool);
      if (!r.ok()) {
        ADD_FAILURE() << r.status().str();
        return run;
      }
      const bool eligible = before.remaining > 2;
      run.eligible_steps += eligible ? 1 : 0;
      run.triggered += r->predictor_triggered ? 1 : 0;
      EXPECT_TRUE(eligible || !r->predictor_triggered);
      const uint32_t owed = (before.flags & kSelfEncodeFirst) != 0 ? 1 : 0;
      EXPECT_EQ(w.header.count, before.count + owed + 1);
      if (owed == 1) {
        EXPECT_EQ(w.At(before.count), device);  // Enc(w), identity codebook
      }
      const uint32_t u = w.At(w.header.count - 1u);
      EXPECT_EQ(world.adjacency[device].count(u), 1u);
      if (r->hop == WalkHop::kServer) {
        EXPECT_EQ(r->outcome, WalkOutcome::kComplete);
        EXPECT_EQ(before.remaining, 1);
        break;
      }
      ++messages;
      if (r->hop == WalkHop::kNeighbour) {
        EXPECT_EQ(w.header.remaining, before.remaining - 1);
        EXPECT_EQ(r->destination, u);
      } else {
        ++run.predicted_hops;
        EXPECT_EQ(w.header.remaining, before.remaining - 2);
        EXPECT_EQ(w.header.flags, kSelfEncodeFirst);
        const std::vector<uint32_t> expected_pool = world.PoolOf(device, u, 256);
        EXPECT_NE(std::find(expected_pool.begin(), expected_pool.end(), r->destination), expected_pool.end());
      }
      if (r->predictor_triggered && r->pool_size == 0) ++run.empty_pools;
      EXPECT_EQ(w.header.hops, messages);
      device = r->destination;
    }
    EXPECT_EQ(w.header.count, l);  // exactly l entries
    ++run.walks;
    run.message_sum += messages;
    run.message_sq += static_cast<double>(messages) * messages;
    run.min_messages = std::min(run.min_messages, messages);
    run.max_messages = std::max(run.max_messages, messages);
  }
  return run;
}

TEST(WalkStepTest, WithoutThePredictorEveryWalkTakesExactlyLMinusOneMessages) {
  const WalkWorld world = WalkWorld::Make(200, 5, 200, 5);
  const WalkRun run = RunWalks(world, 40, 0.0, 2000, 11);
  EXPECT_EQ(run.walks, 2000u);
  EXPECT_EQ(run.min_messages, 39u);
  EXPECT_EQ(run.max_messages, 39u);
  EXPECT_EQ(run.triggered, 0u);
}

TEST(WalkStepTest, TheoremFourTwoMessagesPerWalk) {
  // 200 devices, l = 40, p = 0.2. Messages per walk are i.i.d. with the
  // mean and variance of Eq. 19's recurrence (walk_format.h); the sample
  // mean must lie within z_{alpha/2} standard errors of it.
  const uint16_t l = 40;
  const double p = 0.2;
  const uint64_t n = 10000;
  const WalkWorld world = WalkWorld::Make(200, 5, 200, 6);
  const WalkRun run = RunWalks(world, l, p, n, 12);
  ASSERT_EQ(run.walks, n);
  // The theorem assumes the predictor always has somewhere to jump.
  EXPECT_EQ(run.empty_pools, 0u);

  const testing::MessageMoments m = testing::Moments(l, p);
  EXPECT_NEAR(m.mean, testing::Equation21Corrected(l, p), 1e-9);
  EXPECT_NEAR(m.mean, 32.638888888888886, 1e-9);
  EXPECT_NEAR(m.variance, 3.5686728395, 1e-6);
  const double mean = run.message_sum / static_cast<double>(n);
  const double sample_variance = (run.message_sq - n * mean * mean) / static_cast<double>(n - 1);
  const double tolerance = ::nodefl::testing::ZBound() * std::sqrt(m.variance / static_cast<double>(n));
  EXPECT_LT(std::fabs(mean - m.mean), tolerance) << "mean " << mean << " tolerance " << tolerance;
  // The variance matches too (loosely: a factor-of-1.2 band is many
  // standard errors wide at n = 10,000 for a bounded variable).
  EXPECT_GT(sample_variance, m.variance / 1.2);
  EXPECT_LT(sample_variance, m.variance * 1.2);
  // Eq. 21 as printed (32.31) is off by p / (1 + p)^2-ish; the data tell
  // the two apart by far more than the tolerance. See fedwalk_walk_graph.h.
  EXPECT_GT(std::fabs(mean - testing::Equation21AsPrinted(l, p)), 3 * tolerance);
  // Power: a predictor firing at 0.25 instead of 0.2 would be caught.
  EXPECT_GT(std::fabs(testing::Moments(l, 0.25).mean - m.mean), 3 * tolerance);

  // The predictor fires with probability p at every step with more than
  // two entries to go: binomial bound.
  const double k = static_cast<double>(run.eligible_steps);
  const double expected = p * k;
  const double sd = std::sqrt(k * p * (1 - p));
  EXPECT_LT(std::fabs(static_cast<double>(run.triggered) - expected), ::nodefl::testing::ZBound() * sd)
      << run.triggered << " of " << run.eligible_steps;
  EXPECT_EQ(run.predicted_hops, run.triggered);  // no empty pool: every trigger jumped
}

}  // namespace
}  // namespace nodefl::fedwalk
