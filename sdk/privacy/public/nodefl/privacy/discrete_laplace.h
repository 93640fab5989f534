// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Exact discrete Laplace (two-sided geometric) noise over the integers:
//   P(k) = (1 - q) / (1 + q) * q^|k|,  q = exp(-1/t),  t = numerator/denominator.
// Strict mode's replacement for FedWalk's continuous Lap(0, 1/epsilon) on bin
// counts (FedWalk Sec. 4.2, Alg. 2 line 16).
//
// Guarantee. For an integer query of L1 sensitivity Delta, value + noise with
// t = Delta/epsilon' is exactly epsilon'-DP: P(k)/P(k') <= exp(|k-k'|/t), and
// the sampler below realises P(k) exactly, because it uses integer draws only
// (Drbg::UniformBelow / BernoulliRational), never floating point. Sampling
// follows Canonne, Kamath and Steinke, "The Discrete Gaussian for
// Differential Privacy" (2020), Alg. 1 and 2.
//
// Limits, stated rather than hidden:
//   * The scale is rational. DiscreteLaplaceScaleFor rounds t = Delta/epsilon
//     UP, so the delivered epsilon' = Delta/t is a little below the request
//     (by less than 1e-6 relative); callers record epsilon', not epsilon.
//   * The output is an int64_t, so magnitudes above (2^63 - 1)/denominator
//     cannot be returned; the sampler redraws instead. With numerator <= 2^53
//     that event has probability below exp(-1024): no input-dependent effect
//     is observable.
//   * Running time depends on the drawn value (the loops run longer for large
//     |noise|), so timing leaks about the noise. The expected number of draws
//     is constant. A device releases the value in a message over a channel
//     whose timing is dominated by batching and transport, not this loop;
//     callers that expose fine-grained timing must treat this as a known
//     limitation.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

// t = numerator / denominator. Valid when both are in [1, kMaxDiscreteLaplaceTerm].
struct DiscreteLaplaceScale {
  uint64_t numerator = 1;
  uint64_t denominator = 1;
};

// Both terms are exact in a double (so epsilon' is computed with one
// rounding) and numerator * V + U stays far from 2^63 for any plausible V.
inline constexpr uint64_t kMaxDiscreteLaplaceTerm = uint64_t{1} << 53;

// kInvalidArgument unless both terms are in [1, kMaxDiscreteLaplaceTerm].
Status ValidateDiscreteLaplaceScale(DiscreteLaplaceScale scale);

// The rational scale for epsilon-DP with L1 sensitivity `l1_sensitivity`:
// t = Delta/epsilon rounded up, so that epsilon' = Delta/t satisfies
// epsilon * (1 - 1e-6) <= epsilon' < epsilon. The denominator is a power of
// two chosen to put the numerator in (2^22, 2^23 + 1] when t < 2^22 (larger
// t uses denominator 1). kInvalidArgument for a non-finite or non-positive
// epsilon, Delta == 0, or epsilon outside [Delta * 2^-40, Delta * 2^31]
// (beyond that the rounding margins above no longer hold, or the denominator
// would leave the valid range).
Result<DiscreteLaplaceScale> DiscreteLaplaceScaleFor(double epsilon, uint32_t l1_sensitivity);

// The epsilon' delivered by `scale` for L1 sensitivity Delta: Delta *
// denominator / numerator, rounded up (never below the true value, so the
// ledger never under-records). kInvalidArgument for an invalid scale or
// Delta == 0.
Result<double> DiscreteLaplaceEpsilon(DiscreteLaplaceScale scale, uint32_t l1_sensitivity);

// True with probability exp(-n/d), exactly. For n/d <= 1: draw
// Bernoulli(gamma/k) for k = 1, 2, ... until the first failure at step K and
// return K odd (P(K odd) = sum_j (-gamma)^j / j! = exp(-gamma)). For n/d > 1:
// the product of floor(n/d) Bernoulli(exp(-1)) and Bernoulli(exp(-(n mod d)/d)).
// d must be >= 1 (programming error otherwise). If the DRBG has failed the
// result is meaningless (and loops stop early); callers check rng.status().
bool SampleBernoulliExp(Drbg& rng, uint64_t n, uint64_t d);

// One exact draw of the discrete Laplace with scale t. The scale must be
// valid (programming error otherwise: validate untrusted scales with
// ValidateDiscreteLaplaceScale). Returns 0 if the DRBG fails; callers check
// rng.status() before releasing anything built from the draw.
int64_t SampleDiscreteLaplace(Drbg& rng, DiscreteLaplaceScale scale);

// value + discrete Laplace noise with scale t: epsilon'-DP for an integer
// query of L1 sensitivity Delta, where epsilon' = DiscreteLaplaceEpsilon(
// scale, Delta). The sum saturates at the int64_t range (post-processing, so
// the guarantee is unchanged). kInvalidArgument for an invalid scale; the
// DRBG's error if it has failed (nothing is released then).
Result<int64_t> DiscreteLaplaceMechanism(Drbg& rng, int64_t value, DiscreteLaplaceScale scale);

}  // namespace nodefl
