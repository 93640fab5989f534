// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The coverage measure (distinct adjacent pairs, exact when few, sampled
// when many) and the epochs chosen from it, alone and inside Train.
#include "nodefl/server/fedwalk/skipgram/corpus_coverage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"

namespace nodefl::server::fedwalk {
namespace {

TEST(CorpusCoverageTest, CountsUnorderedPairsExactlyWhenFew) {
  // Every walk goes round a ring of 100 vertices once in either direction,
  // so exactly the ring's 100 edges are crossed, each in both orientations.
  WalkCorpus corpus(100);
  std::vector<uint32_t> walk(101);
  for (uint32_t start = 0; start < 100; start += 7) {
    for (uint32_t k = 0; k <= 100; ++k) walk[k] = (start + k) % 100;
    ASSERT_TRUE(corpus.AddWalk(walk));
    for (uint32_t k = 0; k <= 100; ++k) walk[k] = (start + 100 - k) % 100;
    ASSERT_TRUE(corpus.AddWalk(walk));
  }
  const CorpusCoverage c = MeasureCoverage(corpus);
  EXPECT_EQ(c.tokens, corpus.num_tokens());
  EXPECT_EQ(c.distinct_pairs, 100u);
  EXPECT_DOUBLE_EQ(c.tokens_per_pair, static_cast<double>(corpus.num_tokens()) / 100.0);
}

TEST(CorpusCoverageTest, IgnoresStaysAndWalksWithoutPairs) {
  WalkCorpus corpus(5);
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{3}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{2, 2, 2}));
  CorpusCoverage c = MeasureCoverage(corpus);
  EXPECT_EQ(c.distinct_pairs, 0u);
  EXPECT_EQ(c.tokens_per_pair, 0.0);
  EXPECT_EQ(AutoEpochs(c), 1u);
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{2, 4, 2, 4}));
  c = MeasureCoverage(corpus);
  EXPECT_EQ(c.distinct_pairs, 1u);
  EXPECT_DOUBLE_EQ(c.tokens_per_pair, 8.0);
}

// Walks of two tokens {i, distinct + (i + shift) mod distinct} for
// `distinct` different i, each pair walked `repeats` times in a shuffled
// order: `distinct` pairs exactly. (The estimate depends on which pairs
// there are, not on their order: `shift` gives other sets of pairs.)
WalkCorpus PairWalks(uint32_t distinct, uint32_t repeats, uint32_t shift) {
  WalkCorpus corpus(2 * distinct);
  std::vector<uint32_t> order;
  order.reserve(uint64_t{distinct} * repeats);
  for (uint32_t r = 0; r < repeats; ++r) {
    for (uint32_t i = 0; i < distinct; ++i) order.push_back(i);
  }
  FastRng rng(shift);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(static_cast<uint32_t>(i))]);
  corpus.Reserve(order.size(), 2 * order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const uint32_t i = order[k];
    const uint32_t j = distinct + (i + shift) % distinct;
    // Alternate the orientation: {a, b} and {b, a} are one pair.
    const std::vector<uint32_t> walk = k % 2 == 0 ? std::vector<uint32_t>{i, j} : std::vector<uint32_t>{j, i};
    EXPECT_TRUE(corpus.AddWalk(walk));
  }
  return corpus;
}

TEST(CorpusCoverageTest, ExactUpToTheSampleSize) {
  const CorpusCoverage c = MeasureCoverage(PairWalks(16000, 2, 5));
  EXPECT_EQ(c.distinct_pairs, 16000u);
}

TEST(CorpusCoverageTest, EstimatesManyPairsWithinAFewPercent) {
  // Above 16,384 pairs the kept sample is 8,192 .. 16,384 hashes: a
  // relative standard error of at most 1.1%, so 4.5% is four standard
  // errors. Several sizes cover different sampling levels (1 .. 6).
  for (const uint32_t distinct : {20000u, 77777u, 300000u, 1000000u}) {
    for (const uint32_t shift : {1u, 2u}) {
      const CorpusCoverage c = MeasureCoverage(PairWalks(distinct, 2, shift));
      const double ratio = static_cast<double>(c.distinct_pairs) / distinct;
      EXPECT_NEAR(ratio, 1.0, 0.045) << distinct << " pairs, shift " << shift;
      EXPECT_NEAR(c.tokens_per_pair, 4.0 / ratio, 1e-9);
    }
  }
}

TEST(CorpusCoverageTest, AutoEpochsGiveEnoughOccurrencesPerPair) {
  CorpusCoverage c;
  c.distinct_pairs = 1000;
  const auto epochs_at = [&c](double tokens_per_pair) {
    c.tokens_per_pair = tokens_per_pair;
    return AutoEpochs(c);
  };
  EXPECT_EQ(epochs_at(kAutoEpochTokensPerPair), 1u);
  EXPECT_EQ(epochs_at(4 * kAutoEpochTokensPerPair), 1u);
  EXPECT_EQ(epochs_at(kAutoEpochTokensPerPair * 0.99), 2u);
  EXPECT_EQ(epochs_at(kAutoEpochTokensPerPair / 2), 2u);
  EXPECT_EQ(epochs_at(kAutoEpochTokensPerPair / 2.5), 3u);
  EXPECT_EQ(epochs_at(0.01), kAutoEpochsMax);
  for (double r = 0.5; r < 100; r *= 1.37) {
    const uint32_t e = epochs_at(r);
    EXPECT_GE(e * r, std::min(kAutoEpochTokensPerPair, kAutoEpochsMax * r) - 1e-9) << r;
    if (e > 1) {
      EXPECT_LT((e - 1) * r, kAutoEpochTokensPerPair) << r;
    }
  }
}

TEST(CorpusCoverageTest, TrainRunsTheChosenEpochs) {
  // 40 walks of 31 tokens round a 60-ring, starting every third vertex,
  // cross its 60 edges at 1,240 / 60 = 20.7 tokens per edge: auto picks 2
  // epochs; an explicit count is kept.
  WalkCorpus corpus(60);
  std::vector<uint32_t> walk(31);
  for (uint32_t w = 0; w < 40; ++w) {
    for (uint32_t k = 0; k < walk.size(); ++k) walk[k] = (3 * w + k) % 60;
    ASSERT_TRUE(corpus.AddWalk(walk));
  }
  SkipGramOptions o;
  o.dim = 8;
  o.threads = 1;
  const CorpusCoverage c = MeasureCoverage(corpus);
  ASSERT_EQ(c.distinct_pairs, 60u);
  const uint32_t expected = AutoEpochs(c);
  ASSERT_EQ(expected, 2u);
  EXPECT_EQ(EpochsFor(corpus, o), expected);
  uint64_t last_total = 0;
  ASSERT_TRUE(Train(corpus, o, [&](uint64_t, uint64_t total) { last_total = total; }).has_value());
  EXPECT_EQ(last_total, expected * corpus.num_tokens());
  o.epochs = 5;
  EXPECT_EQ(EpochsFor(corpus, o), 5u);
  ASSERT_TRUE(Train(corpus, o, [&](uint64_t, uint64_t total) { last_total = total; }).has_value());
  EXPECT_EQ(last_total, 5 * corpus.num_tokens());
}

}  // namespace
}  // namespace nodefl::server::fedwalk
