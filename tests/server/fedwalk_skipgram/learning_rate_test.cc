// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The small numeric pieces of the trainer: learning-rate schedule, sigmoid
// table, random numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/learning_rate.h"
#include "nodefl/server/fedwalk/skipgram/sigmoid_table.h"
#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

TEST(LearningRateTest, DecaysLinearlyBetweenTheEndpoints) {
  constexpr float kAlpha = 0.025f, kMin = 0.0001f;
  constexpr uint64_t kTotal = 33000000;
  EXPECT_EQ(LinearLearningRate(kAlpha, kMin, 0, kTotal), kAlpha);
  EXPECT_EQ(LinearLearningRate(kAlpha, kMin, kTotal, kTotal), kMin);
  EXPECT_FLOAT_EQ(LinearLearningRate(kAlpha, kMin, kTotal / 2, kTotal), (kAlpha + kMin) / 2);
  EXPECT_FLOAT_EQ(LinearLearningRate(kAlpha, kMin, kTotal / 4, kTotal), kAlpha - (kAlpha - kMin) / 4);
  // Late reports never push the rate below min_alpha.
  EXPECT_EQ(LinearLearningRate(kAlpha, kMin, 2 * kTotal, kTotal), kMin);
  EXPECT_EQ(LinearLearningRate(kAlpha, kMin, 5, 0), kAlpha);
  float previous = kAlpha;
  for (uint64_t done = 0; done <= kTotal; done += kTotal / 100) {
    const float rate = LinearLearningRate(kAlpha, kMin, done, kTotal);
    EXPECT_LE(rate, previous);
    previous = rate;
  }
}

TEST(SigmoidTableTest, WithinDocumentedErrorEverywhere) {
  const SigmoidTable sigmoid;
  for (double x = -12; x <= 12; x += 1.0 / 1024 + 1e-7) {
    const double exact = 1 / (1 + std::exp(-x));
    ASSERT_NEAR(sigmoid(static_cast<float>(x)), exact, SigmoidTable::kMaxError) << "x = " << x;
  }
  EXPECT_EQ(sigmoid(8.0f), 1.0f);
  EXPECT_EQ(sigmoid(100.0f), 1.0f);
  EXPECT_EQ(sigmoid(INFINITY), 1.0f);
  EXPECT_EQ(sigmoid(-8.01f), 0.0f);
  EXPECT_EQ(sigmoid(-INFINITY), 0.0f);
  EXPECT_EQ(sigmoid(NAN), 0.0f);
  // Cell [0, 1/256) holds sigma at its midpoint 1/512.
  EXPECT_NEAR(sigmoid(0.0f), 1 / (1 + std::exp(-1.0 / 512)), 1e-7);
  // sigma(-x) = 1 - sigma(x) up to the error of the two look-ups.
  for (float x = 0.01f; x < 8; x += 0.37f) {
    EXPECT_NEAR(sigmoid(-x), 1 - sigmoid(x), 2 * SigmoidTable::kMaxError) << x;
  }
}

TEST(FastRngTest, BelowIsUniform) {
  constexpr uint32_t kCells = 7;
  constexpr uint64_t kDraws = 70000;
  FastRng rng(11);
  std::vector<double> observed(kCells, 0);
  for (uint64_t i = 0; i < kDraws; ++i) {
    const uint32_t x = rng.Below(kCells);
    ASSERT_LT(x, kCells);
    ++observed[x];
  }
  const std::vector<double> expected(kCells, static_cast<double>(kDraws) / kCells);
  EXPECT_LT(testing::ChiSquareStatistic(observed, expected), testing::ChiSquareCritical(kCells - 1));
  for (int i = 0; i < 1000; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(FastRngTest, StreamsDiffer) {
  EXPECT_NE(FastRng(StreamSeed(1, 0)).Next(), FastRng(StreamSeed(1, 1)).Next());
  EXPECT_NE(FastRng(StreamSeed(1, 0)).Next(), FastRng(StreamSeed(2, 0)).Next());
  EXPECT_EQ(FastRng(StreamSeed(5, 9)).Next(), FastRng(StreamSeed(5, 9)).Next());
}

}  // namespace
}  // namespace nodefl::server::fedwalk
