// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/laplace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "heap_counter.h"
#include "stat_util.h"

namespace nodefl {
namespace {

double LaplaceCdf(double x, double b) {
  return x < 0.0 ? 0.5 * std::exp(x / b) : 1.0 - 0.5 * std::exp(-x / b);
}

// Every statistic of Lap(0, b) the tests check, each expressed so that the
// check is "below its critical value":
//   * mean: sd sqrt(Var / N) = sqrt(2 b^2 / N);
//   * sample variance vs 2 b^2: sd sqrt((mu4 - sigma^4) / N) with
//     mu4 = 24 b^4, sigma^4 = 4 b^4, i.e. sqrt(20 b^4 / N);
//   * tail frequency of |X| > t vs exp(-t/b): binomial sd sqrt(p (1-p) / N),
//     at t = b and t = 3b;
//   * Kolmogorov-Smirnov distance to the CDF, vs KsCritical(N).
// Each z is |estimate - truth| / sd and is compared with ZBound().
struct LaplaceFit {
  double mean_z = 0.0;
  double variance_z = 0.0;
  double tail_z[2] = {0.0, 0.0};
  double ks = 0.0;
  double ks_critical = 0.0;
};

LaplaceFit FitLaplace(std::vector<double> samples, double b) {
  const double n = static_cast<double>(samples.size());
  LaplaceFit fit;
  double sum = 0.0;
  for (double x : samples) sum += x;
  const double mean = sum / n;
  double squares = 0.0;
  for (double x : samples) squares += (x - mean) * (x - mean);
  const double variance = squares / (n - 1.0);
  fit.mean_z = std::fabs(mean) / std::sqrt(2.0 * b * b / n);
  fit.variance_z = std::fabs(variance - 2.0 * b * b) / std::sqrt(20.0 * b * b * b * b / n);
  const double tails[2] = {b, 3.0 * b};
  for (int j = 0; j < 2; ++j) {
    const double p = std::exp(-tails[j] / b);
    double hits = 0.0;
    for (double x : samples) hits += (std::fabs(x) > tails[j]) ? 1.0 : 0.0;
    fit.tail_z[j] = std::fabs(hits / n - p) / std::sqrt(p * (1.0 - p) / n);
  }
  std::sort(samples.begin(), samples.end());
  for (size_t i = 0; i < samples.size(); ++i) {
    const double f = LaplaceCdf(samples[i], b);
    fit.ks = std::max(fit.ks,
                      std::max(f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f));
  }
  fit.ks_critical = testing::KsCritical(samples.size());
  return fit;
}

void ExpectFits(const LaplaceFit& fit) {
  const double z = testing::ZBound();
  EXPECT_LT(fit.mean_z, z);
  EXPECT_LT(fit.variance_z, z);
  EXPECT_LT(fit.tail_z[0], z);
  EXPECT_LT(fit.tail_z[1], z);
  EXPECT_LT(fit.ks, fit.ks_critical);
}

constexpr int kDraws = 100000;

TEST(LaplaceTest, SampleLaplaceHasTheLaplaceDistribution) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(101).ok());
  const double b = 2.5;
  std::vector<double> samples(kDraws);
  for (double& x : samples) x = SampleLaplace(rng, b);
  ASSERT_TRUE(rng.status().ok());
  ExpectFits(FitLaplace(samples, b));
}

TEST(LaplaceTest, ExtremeScalesStayFiniteWithConsistentSigns) {
  // The sampler is scale * (standard Laplace): the same stream at two scales
  // gives the same signs, and nothing overflows or vanishes at the extremes.
  Drbg a, c;
  ASSERT_TRUE(a.SeedDeterministic(5).ok());
  ASSERT_TRUE(c.SeedDeterministic(5).ok());
  for (int i = 0; i < 1000; ++i) {
    const double small = SampleLaplace(a, 1e-300);
    const double large = SampleLaplace(c, 1e300);
    ASSERT_TRUE(std::isfinite(small));
    ASSERT_TRUE(std::isfinite(large));
    ASSERT_NE(large, 0.0);
    ASSERT_EQ(std::signbit(small), std::signbit(large));
  }
}

TEST(LaplaceTest, PowerWrongScaleIsRejected) {
  // The same checks on Lap(0, 1.15 b) (e.g. a sensitivity or epsilon off by
  // 15%) must fail: tolerances are tight enough to matter.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(102).ok());
  const double b = 2.5;
  std::vector<double> samples(kDraws);
  for (double& x : samples) x = SampleLaplace(rng, 1.15 * b);
  const LaplaceFit fit = FitLaplace(samples, b);
  EXPECT_GT(fit.ks, fit.ks_critical);
  EXPECT_GT(fit.variance_z, testing::ZBound());
  EXPECT_GT(fit.tail_z[1], testing::ZBound());
}

TEST(LaplaceTest, PowerMissingSignIsRejected) {
  // A one-sided exponential (sign bit dropped) must fail the mean and KS.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(103).ok());
  const double b = 2.5;
  std::vector<double> samples(kDraws);
  for (double& x : samples) x = std::fabs(SampleLaplace(rng, b));
  const LaplaceFit fit = FitLaplace(samples, b);
  EXPECT_GT(fit.mean_z, testing::ZBound());
  EXPECT_GT(fit.ks, fit.ks_critical);
}

TEST(LaplaceTest, MechanismAddsNoiseOfScaleSensitivityOverEpsilon) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(104).ok());
  const double value = 10.0, sensitivity = 2.0, epsilon = 0.5;
  std::vector<double> noise(50000);
  for (double& x : noise) {
    const Result<double> r = LaplaceMechanism(rng, value, sensitivity, epsilon);
    ASSERT_TRUE(r.ok());
    x = *r - value;
  }
  ExpectFits(FitLaplace(noise, sensitivity / epsilon));
}

TEST(LaplaceTest, MechanismRejectsBadInput) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(105).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Status bad = Status::InvalidArgument();
  EXPECT_EQ(LaplaceMechanism(rng, nan, 1, 1).status(), bad);
  EXPECT_EQ(LaplaceMechanism(rng, inf, 1, 1).status(), bad);
  EXPECT_EQ(LaplaceMechanism(rng, -inf, 1, 1).status(), bad);
  for (double s : {0.0, -1.0, nan, inf}) {
    EXPECT_EQ(LaplaceMechanism(rng, 1, s, 1).status(), bad) << s;
  }
  for (double e : {0.0, -0.5, nan, inf}) {
    EXPECT_EQ(LaplaceMechanism(rng, 1, 1, e).status(), bad) << e;
  }
  // Scale Delta/epsilon overflows to inf or underflows to 0.
  EXPECT_EQ(LaplaceMechanism(rng, 1, 1e300, 1e-300).status(), bad);
  EXPECT_EQ(LaplaceMechanism(rng, 1, 1e-300, 1e300).status(), bad);
  EXPECT_TRUE(LaplaceMechanism(rng, -3, 1e-3, 1e3).ok());
}

TEST(LaplaceTest, MechanismReportsOverflowInsteadOfReleasingInfinity) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(106).ok());
  int overflowed = 0;
  for (int i = 0; i < 200; ++i) {
    const Result<double> r = LaplaceMechanism(rng, DBL_MAX, DBL_MAX, 1.0);
    if (r.ok()) {
      EXPECT_TRUE(std::isfinite(*r));
    } else {
      EXPECT_EQ(r.status(), Status::OutOfRange());
      ++overflowed;
    }
  }
  // Positive noise of scale DBL_MAX overflows half the time.
  EXPECT_GT(overflowed, 0);
}

TEST(LaplaceTest, FailedDrbgReleasesNothing) {
  Drbg unseeded;
  const Result<double> r = LaplaceMechanism(unseeded, 1.0, 1.0, 1.0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status(), Status::FailedPrecondition());
}

TEST(LaplaceTest, NeverAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(107).ok());
  double sink = 0.0;
  NODEFL_EXPECT_NO_HEAP(sink += SampleLaplace(rng, 3.0));
  NODEFL_EXPECT_NO_HEAP(sink += LaplaceMechanism(rng, 1.0, 1.0, 0.5).value_or(0.0));
  NODEFL_EXPECT_NO_HEAP(sink += LaplaceMechanism(rng, 1.0, 1.0, -1.0).value_or(0.0));
  EXPECT_TRUE(std::isfinite(sink));
}

}  // namespace
}  // namespace nodefl
