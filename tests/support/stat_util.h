// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Tolerances for statistical tests, derived from the sampling distribution of
// the statistic instead of guessed. All tests use fixed seeds, so a run is
// deterministic; the significance level only says how unlucky a correct
// mechanism would have to be for its fixed-seed test to fail.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nodefl::testing {

// Significance level used across the statistical tests. At 1e-6 a correct
// mechanism essentially never fails, while the sample sizes used still give
// the tests power to reject the plausible bugs (wrong scale, wrong sign,
// biased recovery); each mechanism's test file has a power check showing so.
inline constexpr double kAlpha = 1e-6;

// Standard normal quantile (inverse CDF), Acklam's rational approximation
// refined by one Newton step; |error| < 1e-12 over (0, 1).
inline double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double plow = 0.02425;
  double x;
  if (p < plow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - plow) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Newton step on Phi(x) - p.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// Two-sided z bound for level alpha: |Z| > z happens with probability alpha.
inline double ZBound(double alpha = kAlpha) { return NormalQuantile(1.0 - alpha / 2.0); }

// Upper critical value of the chi-square distribution with `df` degrees of
// freedom (Wilson-Hilferty cube approximation; accurate to ~1% for df >= 3 at
// small alpha, and conservative enough for the df used here).
inline double ChiSquareCritical(int df, double alpha = kAlpha) {
  const double z = NormalQuantile(1.0 - alpha);
  const double k = static_cast<double>(df);
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

// Pearson's statistic. Callers merge cells so that every expected count is
// at least 5 (the usual validity condition for the chi-square approximation).
inline double ChiSquareStatistic(const std::vector<double>& observed,
                                 const std::vector<double>& expected) {
  double s = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double diff = observed[i] - expected[i];
    s += diff * diff / expected[i];
  }
  return s;
}

// exp(lw_i) / sum_j exp(lw_j), computed in double with the maximum
// subtracted: the reference distribution for log-weight samplers.
inline std::vector<double> NormalizedLogWeights(const std::vector<double>& log_weights) {
  double max = -INFINITY;
  for (double lw : log_weights) max = std::fmax(max, lw);
  std::vector<double> p(log_weights.size());
  double sum = 0.0;
  for (size_t i = 0; i < log_weights.size(); ++i) sum += (p[i] = std::exp(log_weights[i] - max));
  for (double& x : p) x /= sum;
  return p;
}

// Kolmogorov-Smirnov one-sample critical value for n samples (asymptotic):
// P(sqrt(n) D_n > c) ~= 2 exp(-2 c^2).
inline double KsCritical(size_t n, double alpha = kAlpha) {
  return std::sqrt(-0.5 * std::log(alpha / 2.0)) / std::sqrt(static_cast<double>(n));
}

}  // namespace nodefl::testing
