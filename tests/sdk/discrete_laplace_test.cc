// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/discrete_laplace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "heap_counter.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/privacy/laplace.h"
#include "stat_util.h"

namespace nodefl {
namespace {

// ---- The target distribution ------------------------------------------------
// P(k) = (1 - q) / (1 + q) q^|k|, q = exp(-1/t).

double QFor(double t) { return std::exp(-1.0 / t); }

double Pmf(int64_t k, double q) {
  return (1.0 - q) / (1.0 + q) * std::pow(q, static_cast<double>(std::llabs(k)));
}

// P(X > k) for k >= 0: sum_{j > k} (1-q)/(1+q) q^j = q^(k+1) / (1+q).
double UpperTail(int64_t k, double q) {
  return std::pow(q, static_cast<double>(k + 1)) / (1.0 + q);
}

double Variance(double q) { return 2.0 * q / ((1.0 - q) * (1.0 - q)); }

// E X^4 by summing the pmf until the terms no longer matter.
double FourthMoment(double q) {
  double sum = 0.0;
  for (int64_t k = 1; k < 100000; ++k) {
    const double kd = static_cast<double>(k);
    const double term = 2.0 * kd * kd * kd * kd * Pmf(k, q);
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

double ScaleValue(DiscreteLaplaceScale s) {
  return static_cast<double>(s.numerator) / static_cast<double>(s.denominator);
}

// ---- The checks ----------------------------------------------------------------

// Pearson chi-square against the pmf. Cells: each k in [-K, K] and the two
// tails (< -K, > K), with K the largest value for which both cell K and the
// tail beyond it expect at least 5 draws (the pmf is symmetric, so the
// negative side then does too).
struct ChiSquareFit {
  double statistic = 0.0;
  double critical = 0.0;
  int cells = 0;
};

ChiSquareFit FitChiSquare(const std::vector<int64_t>& samples, double t) {
  const double q = QFor(t);
  const double n = static_cast<double>(samples.size());
  int64_t k_max = -1;
  while (n * Pmf(k_max + 1, q) >= 5.0 && n * UpperTail(k_max + 1, q) >= 5.0) ++k_max;
  ChiSquareFit fit;
  if (k_max < 0) return fit;
  const int cells = static_cast<int>(2 * k_max + 3);
  std::vector<double> observed(cells, 0.0), expected(cells, 0.0);
  expected[0] = n * UpperTail(k_max, q);
  expected[cells - 1] = n * UpperTail(k_max, q);
  for (int64_t k = -k_max; k <= k_max; ++k) expected[k + k_max + 1] = n * Pmf(k, q);
  for (int64_t x : samples) {
    const int64_t cell = x < -k_max ? 0 : (x > k_max ? cells - 1 : x + k_max + 1);
    observed[cell] += 1.0;
  }
  fit.statistic = testing::ChiSquareStatistic(observed, expected);
  fit.critical = testing::ChiSquareCritical(cells - 1);
  fit.cells = cells;
  return fit;
}

// Mean vs 0 (sd sqrt(sigma^2 / N)) and sample variance vs sigma^2 =
// 2q/(1-q)^2 (sd sqrt((mu4 - sigma^4) / N), mu4 summed from the pmf).
struct MomentFit {
  double mean_z = 0.0;
  double variance_z = 0.0;
};

MomentFit FitMoments(const std::vector<double>& samples, double q) {
  const double n = static_cast<double>(samples.size());
  double sum = 0.0;
  for (double x : samples) sum += x;
  const double mean = sum / n;
  double squares = 0.0;
  for (double x : samples) squares += (x - mean) * (x - mean);
  const double sigma2 = Variance(q);
  MomentFit fit;
  fit.mean_z = std::fabs(mean) / std::sqrt(sigma2 / n);
  fit.variance_z =
      std::fabs(squares / (n - 1.0) - sigma2) / std::sqrt((FourthMoment(q) - sigma2 * sigma2) / n);
  return fit;
}

std::vector<double> AsDoubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

std::vector<int64_t> Draw(Drbg& rng, DiscreteLaplaceScale scale, int n) {
  std::vector<int64_t> out(n);
  for (int64_t& x : out) x = SampleDiscreteLaplace(rng, scale);
  return out;
}

constexpr int kDraws = 40000;

// ---- SampleBernoulliExp -------------------------------------------------------

TEST(BernoulliExpTest, FrequenciesMatchExpMinusGamma) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(201).ok());
  struct Case {
    uint64_t n, d;
  };
  // gamma = 1/3, 1, 7/4, 5/2 (> 1 goes through the integer-part product),
  // and 1/2 with d = 2^62, where d * k overflows from k = 4 on and the
  // sampler switches to the product of two Bernoullis.
  const Case cases[] = {{1, 3}, {1, 1}, {7, 4}, {5, 2}, {uint64_t{1} << 61, uint64_t{1} << 62}};
  const int n = 30000;
  for (const Case& c : cases) {
    const double p = std::exp(-static_cast<double>(c.n) / static_cast<double>(c.d));
    int hits = 0;
    for (int i = 0; i < n; ++i) hits += SampleBernoulliExp(rng, c.n, c.d) ? 1 : 0;
    EXPECT_NEAR(hits / double(n), p, testing::ZBound() * std::sqrt(p * (1 - p) / n))
        << c.n << "/" << c.d;
  }
  ASSERT_TRUE(rng.status().ok());
}

TEST(BernoulliExpTest, GammaZeroIsCertainAndHugeGammaAlmostNever) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(202).ok());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(SampleBernoulliExp(rng, 0, 1));
    ASSERT_TRUE(SampleBernoulliExp(rng, 0, 12345));
  }
  // exp(-60) ~ 1e-26: a single success would be a bug; also shows the
  // integer-part loop exits early rather than running 60 rounds each time.
  int hits = 0;
  for (int i = 0; i < 1000; ++i) hits += SampleBernoulliExp(rng, 60, 1) ? 1 : 0;
  EXPECT_EQ(hits, 0);
  // n = UINT64_MAX, d = 1: exits at the first failure, long before 2^64 rounds.
  EXPECT_FALSE(SampleBernoulliExp(rng, UINT64_MAX, 1));
}

TEST(BernoulliExpTest, PowerWrongGammaIsRejected) {
  // The frequency check rejects Bernoulli(exp(-1.15 gamma)), a sampler whose
  // gamma is off by 15%.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(203).ok());
  const int n = 30000;
  const double p = std::exp(-1.0);
  int hits = 0;
  for (int i = 0; i < n; ++i) hits += rng.Bernoulli(std::exp(-1.15)) ? 1 : 0;
  EXPECT_GT(std::fabs(hits / double(n) - p), testing::ZBound() * std::sqrt(p * (1 - p) / n));
}

TEST(BernoulliExpTest, FailedDrbgTerminates) {
  // A failed DRBG returns zeros, which make every rational Bernoulli succeed;
  // the loops must still stop.
  Drbg unseeded;
  (void)SampleBernoulliExp(unseeded, 1, 3);
  (void)SampleBernoulliExp(unseeded, 7, 2);
  EXPECT_FALSE(unseeded.status().ok());
}

// ---- SampleDiscreteLaplace ----------------------------------------------------

TEST(DiscreteLaplaceTest, PmfAndMomentsMatchAtSeveralScales) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(301).ok());
  Result<DiscreteLaplaceScale> from_epsilon = DiscreteLaplaceScaleFor(0.7, 1);
  ASSERT_TRUE(from_epsilon.ok());
  // t = 3 (integer), 10/7 = 1/0.7 (non-integer rational), 1/2 (t < 1), and
  // the large-term rational that DiscreteLaplaceScaleFor(0.7, 1) produces.
  const DiscreteLaplaceScale scales[] = {{3, 1}, {10, 7}, {1, 2}, *from_epsilon};
  for (const DiscreteLaplaceScale& scale : scales) {
    SCOPED_TRACE(::testing::Message() << scale.numerator << "/" << scale.denominator);
    const double t = ScaleValue(scale);
    const std::vector<int64_t> samples = Draw(rng, scale, kDraws);
    const ChiSquareFit chi = FitChiSquare(samples, t);
    ASSERT_GE(chi.cells, 3);
    EXPECT_LT(chi.statistic, chi.critical);
    const MomentFit moments = FitMoments(AsDoubles(samples), QFor(t));
    EXPECT_LT(moments.mean_z, testing::ZBound());
    EXPECT_LT(moments.variance_z, testing::ZBound());
  }
  ASSERT_TRUE(rng.status().ok());
}

TEST(DiscreteLaplaceTest, PowerWrongScaleIsRejected) {
  // Samples with t * 1.15 (3.45 = 69/20) tested as t = 3.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(302).ok());
  const std::vector<int64_t> samples = Draw(rng, {69, 20}, kDraws);
  const ChiSquareFit chi = FitChiSquare(samples, 3.0);
  EXPECT_GT(chi.statistic, chi.critical);
  EXPECT_GT(FitMoments(AsDoubles(samples), QFor(3.0)).variance_z, testing::ZBound());
}

TEST(DiscreteLaplaceTest, PowerOneSidedGeometricIsRejected) {
  // |Y|: the sign step lost, a one-sided geometric.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(303).ok());
  std::vector<int64_t> samples = Draw(rng, {10, 7}, kDraws);
  for (int64_t& x : samples) x = std::llabs(x);
  const ChiSquareFit chi = FitChiSquare(samples, 10.0 / 7.0);
  EXPECT_GT(chi.statistic, chi.critical);
  EXPECT_GT(FitMoments(AsDoubles(samples), QFor(10.0 / 7.0)).mean_z, testing::ZBound());
}

TEST(DiscreteLaplaceTest, ExtremeScalesTerminate) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(304).ok());
  // t = 2^-53: q = exp(-2^53) = 0, so every draw is 0.
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(SampleDiscreteLaplace(rng, {1, kMaxDiscreteLaplaceTerm}), 0);
  }
  // t = 2^53: P(0) = (1-q)/(1+q) ~ 2^-54, so a zero would be a bug; the
  // magnitude is of order t (P(|X| < t/1000) ~ 1e-3).
  int small = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t x = SampleDiscreteLaplace(rng, {kMaxDiscreteLaplaceTerm, 1});
    ASSERT_NE(x, 0);
    small += std::llabs(x) < static_cast<int64_t>(kMaxDiscreteLaplaceTerm / 1000) ? 1 : 0;
  }
  EXPECT_LT(small, 10);
  ASSERT_TRUE(rng.status().ok());
}

TEST(DiscreteLaplaceTest, FailedDrbgReturnsZeroAndStops) {
  Drbg unseeded;
  EXPECT_EQ(SampleDiscreteLaplace(unseeded, {3, 1}), 0);
  EXPECT_FALSE(unseeded.status().ok());
}

// ---- Scale selection ----------------------------------------------------------

TEST(DiscreteLaplaceScaleTest, DeliveredEpsilonIsBelowAndCloseToTheRequest) {
  // Includes both ends of the accepted range, Delta * 2^-40 and Delta * 2^31.
  const double lowest = std::ldexp(1.0, -40), highest = std::ldexp(1.0, 31);
  const double epsilons[] = {1e-3, 0.1, 1.0 / 3.0, 0.5, 0.7, 1.0, 2.0, 10.0, 1e3, lowest, highest};
  for (uint32_t delta : {1u, 3u, 1000u}) {
    for (double eps : epsilons) {
      const double request = eps * delta;
      SCOPED_TRACE(::testing::Message() << "epsilon " << request << " delta " << delta);
      const Result<DiscreteLaplaceScale> scale = DiscreteLaplaceScaleFor(request, delta);
      ASSERT_TRUE(scale.ok());
      EXPECT_TRUE(ValidateDiscreteLaplaceScale(*scale).ok());
      const Result<double> delivered = DiscreteLaplaceEpsilon(*scale, delta);
      ASSERT_TRUE(delivered.ok());
      EXPECT_LE(*delivered, request);
      EXPECT_GE(*delivered, request * (1.0 - 1e-6));
      // The reported epsilon' is never below the exact Delta * den / num.
      const long double exact = static_cast<long double>(delta) * scale->denominator /
                                static_cast<long double>(scale->numerator);
      EXPECT_GE(static_cast<long double>(*delivered), exact);
    }
  }
}

TEST(DiscreteLaplaceScaleTest, BadInputsAreRejected) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Status bad = Status::InvalidArgument();
  for (double eps :
       {0.0, -1.0, nan, inf, -inf, 1e-300, 1e300, std::ldexp(1.0, -41), std::ldexp(1.0, 32)}) {
    EXPECT_EQ(DiscreteLaplaceScaleFor(eps, 1).status(), bad) << eps;
  }
  EXPECT_EQ(DiscreteLaplaceScaleFor(1.0, 0).status(), bad);

  const uint64_t max = kMaxDiscreteLaplaceTerm;
  EXPECT_TRUE(ValidateDiscreteLaplaceScale({max, max}).ok());
  EXPECT_TRUE(ValidateDiscreteLaplaceScale({1, 1}).ok());
  for (DiscreteLaplaceScale s :
       {DiscreteLaplaceScale{0, 1}, DiscreteLaplaceScale{1, 0}, DiscreteLaplaceScale{max + 1, 1},
        DiscreteLaplaceScale{1, max + 1}, DiscreteLaplaceScale{UINT64_MAX, UINT64_MAX}}) {
    EXPECT_EQ(ValidateDiscreteLaplaceScale(s), bad);
    EXPECT_EQ(DiscreteLaplaceEpsilon(s, 1).status(), bad);
  }
  EXPECT_EQ(DiscreteLaplaceEpsilon({3, 1}, 0).status(), bad);
}

// ---- DiscreteLaplaceMechanism ---------------------------------------------------

TEST(DiscreteLaplaceMechanismTest, AddsExactlyTheSamplersNoise) {
  Drbg a, b;
  ASSERT_TRUE(a.SeedDeterministic(401).ok());
  ASSERT_TRUE(b.SeedDeterministic(401).ok());
  for (int i = 0; i < 1000; ++i) {
    const Result<int64_t> r = DiscreteLaplaceMechanism(a, 1234, {10, 7});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(*r - 1234, SampleDiscreteLaplace(b, {10, 7}));
  }
}

TEST(DiscreteLaplaceMechanismTest, SaturatesInsteadOfWrapping) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(402).ok());
  int at_max = 0, at_min = 0;
  for (int i = 0; i < 200; ++i) {
    const Result<int64_t> hi = DiscreteLaplaceMechanism(rng, INT64_MAX, {3, 1});
    const Result<int64_t> lo = DiscreteLaplaceMechanism(rng, INT64_MIN, {3, 1});
    ASSERT_TRUE(hi.ok() && lo.ok());
    EXPECT_GT(*hi, INT64_MAX - 1000);  // a wrap would land near INT64_MIN
    EXPECT_LT(*lo, INT64_MIN + 1000);
    at_max += *hi == INT64_MAX ? 1 : 0;
    at_min += *lo == INT64_MIN ? 1 : 0;
  }
  EXPECT_GT(at_max, 0);
  EXPECT_GT(at_min, 0);
}

TEST(DiscreteLaplaceMechanismTest, RejectsBadScaleAndFailedDrbg) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(403).ok());
  EXPECT_EQ(DiscreteLaplaceMechanism(rng, 5, {0, 1}).status(), Status::InvalidArgument());
  EXPECT_EQ(DiscreteLaplaceMechanism(rng, 5, {1, 0}).status(), Status::InvalidArgument());
  Drbg unseeded;
  EXPECT_EQ(DiscreteLaplaceMechanism(unseeded, 5, {3, 1}).status(), Status::FailedPrecondition());
}

// ---- NoiseCounts -----------------------------------------------------------------

const uint32_t kCounts[] = {0, 1, 2, 5, 17, 100, 3, 0};
constexpr size_t kBins = sizeof(kCounts) / sizeof(kCounts[0]);
constexpr int kRounds = 4000;

// Runs NoiseCounts kRounds times; noise[bin][round] = output - count.
std::vector<std::vector<double>> NoiseRounds(Drbg& rng, PrivacyMode mode, double epsilon,
                                             double* spent) {
  std::vector<std::vector<double>> noise(kBins, std::vector<double>(kRounds));
  double out[kBins];
  for (int r = 0; r < kRounds; ++r) {
    EXPECT_TRUE(NoiseCounts(rng, mode, epsilon, kCounts, out, spent).ok());
    for (size_t i = 0; i < kBins; ++i) noise[i][r] = out[i] - kCounts[i];
  }
  return noise;
}

// Largest per-bin |mean noise| / sd(mean), sd = sqrt(variance / rounds).
double WorstBinMeanZ(const std::vector<std::vector<double>>& noise, double variance) {
  double worst = 0.0;
  for (const std::vector<double>& bin : noise) {
    double sum = 0.0;
    for (double x : bin) sum += x;
    worst = std::fmax(worst, std::fabs(sum / kRounds) / std::sqrt(variance / kRounds));
  }
  return worst;
}

TEST(NoiseCountsTest, PaperModeAddsRealLaplaceNoise) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(501).ok());
  const double epsilon = 0.8;
  double spent = -1.0;
  const auto noise = NoiseRounds(rng, PrivacyMode::kPaper, epsilon, &spent);
  EXPECT_EQ(spent, epsilon);
  const double b = 1.0 / epsilon;
  EXPECT_LT(WorstBinMeanZ(noise, 2 * b * b), testing::ZBound());
  int integers = 0;
  std::vector<double> pooled;
  for (const auto& bin : noise) {
    for (double x : bin) {
      integers += (x == std::floor(x)) ? 1 : 0;
      pooled.push_back(x);
    }
  }
  EXPECT_EQ(integers, 0);  // real-valued noise, as in FedWalk
  // Pooled variance vs 2 b^2 (sd sqrt(20 b^4 / N), see laplace_test.cc).
  double squares = 0.0;
  for (double x : pooled) squares += x * x;
  const double n = static_cast<double>(pooled.size());
  EXPECT_NEAR(squares / n, 2 * b * b, testing::ZBound() * std::sqrt(20 * b * b * b * b / n));
}

TEST(NoiseCountsTest, StrictModeAddsIntegerDiscreteLaplaceNoise) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(502).ok());
  const double epsilon = 0.8;
  double spent = -1.0;
  const auto noise = NoiseRounds(rng, PrivacyMode::kStrict, epsilon, &spent);
  const Result<DiscreteLaplaceScale> scale = DiscreteLaplaceScaleFor(epsilon, 1);
  ASSERT_TRUE(scale.ok());
  EXPECT_EQ(spent, DiscreteLaplaceEpsilon(*scale, 1).value());
  EXPECT_LE(spent, epsilon);
  EXPECT_GE(spent, epsilon * (1 - 1e-6));
  const double q = QFor(ScaleValue(*scale));
  EXPECT_LT(WorstBinMeanZ(noise, Variance(q)), testing::ZBound());
  std::vector<double> pooled;
  for (const auto& bin : noise) {
    for (double x : bin) {
      ASSERT_EQ(x, std::floor(x));
      pooled.push_back(x);
    }
  }
  const MomentFit moments = FitMoments(pooled, q);
  EXPECT_LT(moments.variance_z, testing::ZBound());
}

TEST(NoiseCountsTest, PowerBiasedNoiseIsRejectedPerBin) {
  // One-sided noise |Lap(0, b)| has mean b per bin, which the per-bin mean
  // check must catch.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(503).ok());
  const double b = 1.0 / 0.8;
  std::vector<std::vector<double>> noise(kBins, std::vector<double>(kRounds));
  for (auto& bin : noise) {
    for (double& x : bin) x = std::fabs(SampleLaplace(rng, b));
  }
  EXPECT_GT(WorstBinMeanZ(noise, 2 * b * b), testing::ZBound());
}

TEST(NoiseCountsTest, BadInputIsRejectedAndNothingIsReleased) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(504).ok());
  const Status bad = Status::InvalidArgument();
  const uint32_t counts[3] = {1, 2, 3};
  double out4[4] = {7, 7, 7, 7};
  double spent = 9.0;
  EXPECT_EQ(NoiseCounts(rng, PrivacyMode::kStrict, 1.0, counts, out4, &spent), bad);
  EXPECT_EQ(spent, 0.0);
  for (double x : out4) EXPECT_EQ(x, 0.0);

  double out[3];
  EXPECT_EQ(NoiseCounts(rng, PrivacyMode::kPaper, 1.0, counts, out, nullptr), bad);
  EXPECT_EQ(NoiseCounts(rng, static_cast<PrivacyMode>(7), 1.0, counts, out, &spent), bad);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (PrivacyMode mode : {PrivacyMode::kPaper, PrivacyMode::kStrict}) {
    for (double eps : {0.0, -1.0, nan, inf, 1e-320}) {
      spent = 9.0;
      EXPECT_EQ(NoiseCounts(rng, mode, eps, counts, out, &spent), bad) << eps;
      EXPECT_EQ(spent, 0.0);
    }
  }
  // Beyond the discrete scale's range only strict mode refuses.
  EXPECT_EQ(NoiseCounts(rng, PrivacyMode::kStrict, 1e300, counts, out, &spent), bad);
  EXPECT_TRUE(NoiseCounts(rng, PrivacyMode::kPaper, 1e300, counts, out, &spent).ok());

  // An empty vector is a valid (if pointless) release.
  EXPECT_TRUE(
      NoiseCounts(rng, PrivacyMode::kPaper, 0.5, Span<const uint32_t>(), Span<double>(), &spent)
          .ok());
  EXPECT_EQ(spent, 0.5);
}

TEST(NoiseCountsTest, FailedDrbgReleasesNothing) {
  const uint32_t counts[3] = {1, 2, 3};
  for (PrivacyMode mode : {PrivacyMode::kPaper, PrivacyMode::kStrict}) {
    Drbg unseeded;
    double out[3] = {7, 7, 7};
    double spent = 9.0;
    EXPECT_EQ(NoiseCounts(unseeded, mode, 1.0, counts, out, &spent), Status::FailedPrecondition());
    EXPECT_EQ(spent, 0.0);
    for (double x : out) EXPECT_EQ(x, 0.0);
  }
}

// ---- No heap --------------------------------------------------------------------

TEST(DiscreteLaplaceTest, NeverAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(601).ok());
  int64_t sink = 0;
  const uint32_t counts[4] = {3, 0, 9, 1};
  double out[4];
  double spent = 0.0;
  NODEFL_EXPECT_NO_HEAP(sink += SampleBernoulliExp(rng, 7, 4) ? 1 : 0);
  NODEFL_EXPECT_NO_HEAP(sink += SampleDiscreteLaplace(rng, {10, 7}));
  NODEFL_EXPECT_NO_HEAP(sink += DiscreteLaplaceMechanism(rng, 5, {3, 1}).value_or(0));
  NODEFL_EXPECT_NO_HEAP(sink += ValidateDiscreteLaplaceScale({0, 1}).ok() ? 1 : 0);
  NODEFL_EXPECT_NO_HEAP(sink += DiscreteLaplaceScaleFor(0.5, 1).ok() ? 1 : 0);
  NODEFL_EXPECT_NO_HEAP(sink += DiscreteLaplaceEpsilon({3, 1}, 1).ok() ? 1 : 0);
  NODEFL_EXPECT_NO_HEAP(
      NoiseCounts(rng, PrivacyMode::kStrict, 0.5, counts, out, &spent).IgnoreError());
  NODEFL_EXPECT_NO_HEAP(
      NoiseCounts(rng, PrivacyMode::kPaper, 0.5, counts, out, &spent).IgnoreError());
  EXPECT_GT(sink, -1000000);
}

}  // namespace
}  // namespace nodefl
