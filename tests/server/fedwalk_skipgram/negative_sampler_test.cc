// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The negative sampler draws vertex v with probability count_v^0.75 / Z.
#include "nodefl/server/fedwalk/skipgram/negative_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

const std::vector<uint64_t> kCounts = {1, 2, 5, 10, 50, 100, 0, 7, 300, 3, 1000, 20};

std::vector<double> PowerDistribution(const std::vector<uint64_t>& counts, double power) {
  std::vector<double> p(counts.size());
  double z = 0;
  for (size_t i = 0; i < counts.size(); ++i) z += p[i] = counts[i] == 0 ? 0 : std::pow(counts[i], power);
  for (double& x : p) x /= z;
  return p;
}

std::vector<double> Draw(const NegativeSampler& sampler, uint64_t draws, uint64_t seed) {
  std::vector<double> observed(sampler.size(), 0);
  FastRng rng(seed);
  for (uint64_t i = 0; i < draws; ++i) ++observed[sampler.Sample(rng)];
  return observed;
}

// Chi-square statistic of `observed` against `draws * p` over the cells
// with p > 0 (all of which expect far more than 5 draws here).
double ChiSquare(const std::vector<double>& observed, const std::vector<double>& p, uint64_t draws, int* df) {
  std::vector<double> o, e;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    o.push_back(observed[i]);
    e.push_back(p[i] * static_cast<double>(draws));
    EXPECT_GE(e.back(), 5.0);
  }
  *df = static_cast<int>(o.size()) - 1;
  return testing::ChiSquareStatistic(o, e);
}

TEST(NegativeSamplerTest, FrequenciesFollowCountToTheThreeQuarters) {
  const auto sampler = NegativeSampler::FromCounts(kCounts);
  ASSERT_TRUE(sampler.has_value());
  constexpr uint64_t kDraws = 400000;
  const std::vector<double> observed = Draw(*sampler, kDraws, 7);
  EXPECT_EQ(observed[6], 0) << "a vertex that never occurs must never be a negative";
  int df = 0;
  const double stat = ChiSquare(observed, PowerDistribution(kCounts, 0.75), kDraws, &df);
  EXPECT_LT(stat, testing::ChiSquareCritical(df)) << "df " << df;
}

// Power check: the same draws clearly reject the plain unigram (power 1)
// and the uniform (power 0) distributions, so the test above can fail.
TEST(NegativeSamplerTest, ChiSquareRejectsOtherPowers) {
  const auto sampler = NegativeSampler::FromCounts(kCounts);
  ASSERT_TRUE(sampler.has_value());
  constexpr uint64_t kDraws = 400000;
  const std::vector<double> observed = Draw(*sampler, kDraws, 7);
  for (double power : {1.0, 0.0, 0.7}) {
    int df = 0;
    const double stat = ChiSquare(observed, PowerDistribution(kCounts, power), kDraws, &df);
    EXPECT_GT(stat, testing::ChiSquareCritical(df)) << "power " << power;
  }
}

TEST(NegativeSamplerTest, TableProbabilitiesAreExact) {
  std::vector<uint64_t> counts(1000);
  FastRng rng(3);
  for (uint64_t& c : counts) c = rng.Below(10) == 0 ? 0 : 1 + rng.Below(100000);
  const auto sampler = NegativeSampler::FromCounts(counts);
  ASSERT_TRUE(sampler.has_value());
  const std::vector<double> expected = PowerDistribution(counts, 0.75);
  const std::vector<double> actual = sampler->Probabilities();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    // Coins are quantised to 2^-32 per cell.
    EXPECT_NEAR(actual[i], expected[i], 1e-9) << "vertex " << i;
    if (counts[i] == 0) {
      EXPECT_EQ(actual[i], 0.0) << "vertex " << i;
    }
  }
}

TEST(NegativeSamplerTest, SingleVertexAndRejectedInputs) {
  const std::vector<uint64_t> one = {0, 4, 0};
  const auto sampler = NegativeSampler::FromCounts(one);
  ASSERT_TRUE(sampler.has_value());
  FastRng rng(1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler->Sample(rng), 1u);

  EXPECT_FALSE(NegativeSampler::FromCounts(std::vector<uint64_t>{}).has_value());
  EXPECT_FALSE(NegativeSampler::FromCounts(std::vector<uint64_t>{0, 0}).has_value());
  EXPECT_FALSE(NegativeSampler::FromCounts(one, -1.0).has_value());
  EXPECT_FALSE(NegativeSampler::FromCounts(one, NAN).has_value());
}

}  // namespace
}  // namespace nodefl::server::fedwalk
