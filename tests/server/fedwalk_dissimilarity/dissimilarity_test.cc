// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The all-pairs pass: every entry equals the pairwise reference, results do
// not depend on the thread count, and the strict-mode metric is the 1-D
// earth mover's distance it claims to be.
#include <gtest/gtest.h>

#include "nodefl/server/fedwalk/dissimilarity/histogram_emd.h"

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/dissimilarity/dissimilarity.h"
#include "nodefl/server/fedwalk/dissimilarity/dtw.h"
#include "dtw_reference.h"
#include "random_matrices.h"

namespace nodefl::server::fedwalk {
namespace {

bool BitIdentical(const CondensedMatrix& a, const CondensedMatrix& b) {
  return a.n() == b.n() && a.values().size() == b.values().size() &&
         std::memcmp(a.values().data(), b.values().data(), a.values().size() * sizeof(float)) == 0;
}

TEST(DissimilarityTest, AllPairsDtwMatchesPairwiseReference) {
  std::mt19937_64 rng(31);
  std::vector<std::vector<float>> m;
  constexpr uint32_t kBins = 9;
  const FeatureStore store = test::RandomOrderedStore(rng, 40, 25, kBins, m);

  const CondensedMatrix one = ComputeDissimilarities(store, 1);
  const CondensedMatrix three = ComputeDissimilarities(store, 3);
  ASSERT_EQ(one.n(), 40u);
  EXPECT_TRUE(BitIdentical(one, three));

  // DtwL1's bound plus the final rounding to float (2^-24 relative).
  const double tolerance = DtwRelativeTolerance(kBins) + 1.0 / 16777216.0;
  DtwWorkspace workspace;
  int empty_pairs = 0;
  for (uint32_t i = 0; i < 40; ++i) {
    for (uint32_t j = i + 1; j < 40; ++j) {
      const double reference = DtwL1Reference(m[i].data(), store.rows(i), m[j].data(), store.rows(j), kBins);
      EXPECT_NEAR(one.at(i, j), reference, tolerance * reference) << i << ", " << j;
      if (store.rows(i) + store.rows(j) > 0) {
        EXPECT_GT(one.at(i, j), 0.0f) << "every pair was written";
      }
      EXPECT_EQ(one.at(i, j), static_cast<float>(PairDissimilarity(store, i, j, workspace)));
      empty_pairs += store.rows(i) == 0 || store.rows(j) == 0;
    }
  }
  EXPECT_GT(empty_pairs, 0);  // isolated vertices took part
}

TEST(DissimilarityTest, AllPairsHistogramEmdMatchesPairwiseEmd) {
  std::mt19937_64 rng(32);
  const FeatureStore store = test::RandomHistogramStore(rng, 41, 5, 16);
  const CondensedMatrix one = ComputeDissimilarities(store, 1);
  const CondensedMatrix three = ComputeDissimilarities(store, 3);
  EXPECT_TRUE(BitIdentical(one, three));
  for (uint32_t i = 0; i < 41; ++i) {
    for (uint32_t j = i + 1; j < 41; ++j) {
      // Integer-valued and far below 2^24: exact in float.
      EXPECT_EQ(one.at(i, j), nodefl::server::fedwalk::HistogramEmd(store.histogram(i), store.histogram(j), 5, 16));
    }
  }
}

TEST(DissimilarityTest, HistogramEmdHandChecked) {
  // 2 bins x 3 buckets. EMD per bin with unit distance between adjacent
  // buckets; mass missing on one side is carried past the last bucket.
  FeatureStore store = FeatureStore::Histograms(2, 3).value();
  ASSERT_TRUE(store.AddHistogram(std::vector<int32_t>{2, 0, 1, /**/ 1, 0, 0}).ok());  // v0
  ASSERT_TRUE(store.AddHistogram(std::vector<int32_t>{0, 1, 2, /**/ 0, 0, 0}).ok());  // v1
  ASSERT_TRUE(store.AddHistogram(std::vector<int32_t>{0, 0, 3, /**/ 0, 1, 0}).ok());  // v2
  const CondensedMatrix d = ComputeDissimilarities(store, 2);
  // v0-v1: bin 0 moves one unit 0->1 (1) and one 0->2 (2) = 3; bin 1 carries
  //        v0's single unit from bucket 0 past bucket 2 = 3. Total 6.
  EXPECT_EQ(d.at(0, 1), 6.0f);
  // v0-v2: bin 0 moves two units 0->2 = 4; bin 1 moves one unit 0->1 = 1. 5.
  EXPECT_EQ(d.at(0, 2), 5.0f);
  // v1-v2: bin 0 moves one unit 1->2 = 1; bin 1 carries v2's unit from
  //        bucket 1 past bucket 2 = 2. Total 3.
  EXPECT_EQ(d.at(1, 2), 3.0f);
}

TEST(DissimilarityTest, ProgressIsReportedOnTheCallingThreadAndEndsComplete) {
  std::mt19937_64 rng(33);
  std::vector<std::vector<float>> m;
  const FeatureStore store = test::RandomOrderedStore(rng, 60, 30, 4, m);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  bool other_thread = false;
  (void)ComputeDissimilarities(store, 2, [&](uint64_t done, uint64_t total) {
    other_thread |= std::this_thread::get_id() != caller;
    calls.emplace_back(done, total);
  });
  EXPECT_FALSE(other_thread);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, 60u * 59 / 2);
  EXPECT_EQ(calls.back().second, 60u * 59 / 2);
  for (size_t c = 1; c < calls.size(); ++c) EXPECT_LE(calls[c - 1].first, calls[c].first);
}

TEST(DissimilarityTest, TinyStores) {
  FeatureStore store = FeatureStore::OrderedMatrices(2).value();
  EXPECT_EQ(ComputeDissimilarities(store, 2).n(), 0u);
  ASSERT_TRUE(store.AddOrderedMatrix(std::vector<float>{1, 2}, 1).ok());
  EXPECT_EQ(ComputeDissimilarities(store, 2).values().size(), 0u);
  ASSERT_TRUE(store.AddOrderedMatrix(std::vector<float>{}, 0).ok());  // isolated vertex
  const CondensedMatrix d = ComputeDissimilarities(store, 0);        // 0: all cores
  ASSERT_EQ(d.n(), 2u);
  EXPECT_EQ(d.at(0, 1), 3.0f);  // the L1 norm of the single row (1, 2)
}

TEST(DissimilarityTest, WorkCells) {
  FeatureStore store = FeatureStore::OrderedMatrices(1).value();
  for (uint32_t rows : {3u, 0u, 5u, 2u}) ASSERT_TRUE(store.AddOrderedMatrix(std::vector<float>(rows, 1.0f), rows).ok());
  // Pairs: 3*0 + 3*5 + 3*2 + 0*5 + 0*2 + 5*2 = 31.
  EXPECT_EQ(DissimilarityWorkCells(store), 31u);
  FeatureStore histograms = FeatureStore::Histograms(3, 4).value();
  for (int v = 0; v < 5; ++v) ASSERT_TRUE(histograms.AddHistogram(std::vector<int32_t>(12, v)).ok());
  EXPECT_EQ(DissimilarityWorkCells(histograms), 10u * 12u);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
