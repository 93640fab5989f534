// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/discrete_laplace.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "nodefl/core/assert.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/privacy/laplace.h"

namespace nodefl {
namespace {

// Numerators of at least 2^22 make the ceil() in DiscreteLaplaceScaleFor
// cost under 2^-21 < 1e-6 of relative epsilon.
constexpr double kMinNumerator = 4194304.0;  // 2^22
// Largest t = Delta/epsilon DiscreteLaplaceScaleFor accepts (epsilon >=
// Delta * 2^-40 ~ 9e-13 Delta, far below any useful budget). It keeps the gap
// between epsilon' and epsilon (about 1/numerator relative) well above the
// 2^-50 by which DiscreteLaplaceEpsilon rounds up, so the rounded-up epsilon'
// still stays below the request.
constexpr double kMaxScaleBeforeRounding = 1099511627776.0;  // 2^40

// Bernoulli(exp(-n/d)) for 0 <= n <= d. Step k succeeds with probability
// gamma/k; the number K of the first failing step is odd with probability
// 1 - gamma + gamma^2/2! - ... = exp(-gamma). Expected steps: exp(gamma) <= e.
bool BernoulliExpUpToOne(Drbg& rng, uint64_t n, uint64_t d) {
  if (n == 0) return true;
  uint64_t k = 1;
  for (;;) {
    bool success;
    if (k <= UINT64_MAX / d) {
      success = rng.BernoulliRational(n, d * k);
    } else {
      // d*k does not fit in 64 bits: n/(d k) is also the probability that
      // independent Bernoulli(n/d) and Bernoulli(1/k) both succeed.
      success = rng.BernoulliRational(n, d) && rng.BernoulliRational(1, k);
    }
    if (!success) break;
    // A failed DRBG yields zeros, which make every BernoulliRational succeed:
    // stop instead of spinning.
    if (!rng.status().ok()) return false;
    ++k;
  }
  return (k & 1u) == 1u;
}

}  // namespace

Status ValidateDiscreteLaplaceScale(DiscreteLaplaceScale scale) {
  if (scale.numerator < 1 || scale.numerator > kMaxDiscreteLaplaceTerm) {
    return Status::InvalidArgument();
  }
  if (scale.denominator < 1 || scale.denominator > kMaxDiscreteLaplaceTerm) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Result<DiscreteLaplaceScale> DiscreteLaplaceScaleFor(double epsilon, uint32_t l1_sensitivity) {
  if (!std::isfinite(epsilon) || !(epsilon > 0.0) || l1_sensitivity == 0) {
    return Status::InvalidArgument();
  }
  // x = Delta * den / epsilon with den a power of two: scaling by 2 is exact,
  // so x carries the single rounding of Delta / epsilon (relative error at
  // most 2^-53, as x stays a normal double whenever a valid scale exists).
  double x = static_cast<double>(l1_sensitivity) / epsilon;
  if (!(x <= kMaxScaleBeforeRounding)) return Status::InvalidArgument();
  uint64_t denominator = 1;
  while (x < kMinNumerator) {
    if (denominator >= kMaxDiscreteLaplaceTerm) return Status::InvalidArgument();
    x *= 2.0;
    denominator *= 2;
  }
  // numerator >= x + 1 > x / (1 - 2^-53) >= Delta * den / epsilon (x <= 2^40),
  // so t = numerator / den strictly exceeds Delta / epsilon: epsilon' < epsilon.
  const uint64_t numerator = static_cast<uint64_t>(std::ceil(x)) + 1;
  const DiscreteLaplaceScale scale{numerator, denominator};
  NODEFL_TRY_ASSIGN(const double delivered, DiscreteLaplaceEpsilon(scale, l1_sensitivity));
  // Unreachable by the bound above; kept so a mistake there fails closed.
  if (!(delivered <= epsilon)) return Status::Internal();
  return scale;
}

Result<double> DiscreteLaplaceEpsilon(DiscreteLaplaceScale scale, uint32_t l1_sensitivity) {
  NODEFL_TRY(ValidateDiscreteLaplaceScale(scale));
  if (l1_sensitivity == 0) return Status::InvalidArgument();
  // Two roundings to nearest (product, quotient) put the double within a
  // factor (1 - 2^-53)^2 of the true ratio; the factor (1 + 2^-50), itself
  // rounded, more than covers that, so the result is never below the truth.
  const double ratio = static_cast<double>(l1_sensitivity) *
                       static_cast<double>(scale.denominator) /
                       static_cast<double>(scale.numerator);
  return ratio * (1.0 + 0x1.0p-50);
}

bool SampleBernoulliExp(Drbg& rng, uint64_t n, uint64_t d) {
  NODEFL_CHECK(d >= 1);
  // exp(-n/d) = exp(-1)^floor(n/d) * exp(-(n mod d)/d), each factor an
  // independent Bernoulli; stop at the first failure.
  const uint64_t whole = n / d;
  for (uint64_t i = 0; i < whole; ++i) {
    if (!BernoulliExpUpToOne(rng, 1, 1)) return false;
  }
  return BernoulliExpUpToOne(rng, n % d, d);
}

int64_t SampleDiscreteLaplace(Drbg& rng, DiscreteLaplaceScale scale) {
  NODEFL_CHECK(ValidateDiscreteLaplaceScale(scale).ok());
  const uint64_t num = scale.numerator;
  const uint64_t den = scale.denominator;
  // Largest V with U + num * V <= 2^63 - 1 for every U < num; with
  // num <= 2^53 it is >= 1023, and P(V > cap) = exp(-(cap + 1)) < exp(-1024).
  const uint64_t v_cap = (static_cast<uint64_t>(INT64_MAX) - (num - 1)) / num;
  for (;;) {
    if (!rng.status().ok()) return 0;
    // X = U + num * V is geometric on {0, 1, ...} with P(X = x) ~
    // exp(-x / num): U carries the fractional part (accepted with
    // probability exp(-U/num)), V the whole multiples of num (each further
    // multiple with probability exp(-1)).
    const uint64_t u = rng.UniformBelow(num);
    if (!BernoulliExpUpToOne(rng, u, num)) continue;
    uint64_t v = 0;
    bool too_large = false;
    while (BernoulliExpUpToOne(rng, 1, 1)) {
      if (v == v_cap) {
        too_large = true;
        break;
      }
      ++v;
    }
    if (too_large) continue;
    // floor(X / den) is geometric with P(Y = y) ~ exp(-y * den / num) =
    // exp(-y / t).
    const uint64_t y = (u + num * v) / den;
    const bool negative = rng.BernoulliRational(1, 2);
    // A symmetric sign would count 0 twice (+0 and -0); dropping -0 leaves
    // P(k) ~ exp(-|k| / t) on all of Z.
    if (negative && y == 0) continue;
    const int64_t magnitude = static_cast<int64_t>(y);
    return negative ? -magnitude : magnitude;
  }
}

Result<int64_t> DiscreteLaplaceMechanism(Drbg& rng, int64_t value, DiscreteLaplaceScale scale) {
  NODEFL_TRY(ValidateDiscreteLaplaceScale(scale));
  const int64_t noise = SampleDiscreteLaplace(rng, scale);
  NODEFL_TRY(rng.status());
  if (noise > 0 && value > INT64_MAX - noise) return int64_t{INT64_MAX};
  if (noise < 0 && value < INT64_MIN - noise) return int64_t{INT64_MIN};
  return value + noise;
}

// ---- FedWalk bin counts (count_noise.h) ------------------------------------

namespace {

Status NoiseCountsUnchecked(Drbg& rng, PrivacyMode mode, double epsilon,
                            Span<const uint32_t> counts, Span<double> noised_out,
                            double* epsilon_spent) {
  if (epsilon_spent == nullptr || counts.size() != noised_out.size()) {
    return Status::InvalidArgument();
  }
  switch (mode) {
    case PrivacyMode::kPaper: {
      if (!std::isfinite(epsilon) || !(epsilon > 0.0)) return Status::InvalidArgument();
      const double scale = 1.0 / epsilon;  // L1 sensitivity 1
      if (!std::isfinite(scale) || !(scale > 0.0)) return Status::InvalidArgument();
      for (size_t i = 0; i < counts.size(); ++i) {
        noised_out[i] = static_cast<double>(counts[i]) + SampleLaplace(rng, scale);
      }
      NODEFL_TRY(rng.status());
      *epsilon_spent = epsilon;
      return Status::Ok();
    }
    case PrivacyMode::kStrict: {
      NODEFL_TRY_ASSIGN(const DiscreteLaplaceScale scale, DiscreteLaplaceScaleFor(epsilon, 1));
      NODEFL_TRY_ASSIGN(const double delivered, DiscreteLaplaceEpsilon(scale, 1));
      for (size_t i = 0; i < counts.size(); ++i) {
        // Summed in double: exact below 2^53, and rounding an exact integer
        // release beyond that is post-processing.
        noised_out[i] =
            static_cast<double>(counts[i]) + static_cast<double>(SampleDiscreteLaplace(rng, scale));
      }
      NODEFL_TRY(rng.status());
      *epsilon_spent = delivered;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument();
}

}  // namespace

Status NoiseCounts(Drbg& rng, PrivacyMode mode, double epsilon, Span<const uint32_t> counts,
                   Span<double> noised_out, double* epsilon_spent) {
  if (epsilon_spent != nullptr) *epsilon_spent = 0.0;
  const Status status = NoiseCountsUnchecked(rng, mode, epsilon, counts, noised_out, epsilon_spent);
  if (!status.ok()) {
    // A partly noised vector must not be mistaken for a release.
    for (double& out : noised_out) out = 0.0;
  }
  return status;
}

}  // namespace nodefl
