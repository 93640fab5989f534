// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The exponential mechanism over a finite candidate set, worked in the log
// domain so that scores of any magnitude (FedWalk's are products of a DTW
// distance and a leaf count, easily in the thousands) never overflow or
// underflow into a NaN distribution.
//
// FedWalk Eq. 9 samples an output r with
// probability proportional to exp(eps * u(d, r)) * mu(r); with the uniform
// base measure of Eq. 11 and the score of Eq. 10,
//   u(v1, v2) = -dissim(v1, v2) * |leaves(T[v1 v v2])|,
// this becomes Eq. 12, Pr[v2 | v1] ~ exp(-eps * dissim * |leaves|).
//
// Known defect: Eq. 9/12 use the raw score. If changing one individual's data
// moves every score by at most Delta_u (the score's sensitivity), the raw
// mechanism is only (2 * eps * Delta_u)-DP, not eps-DP: the numerator can
// grow by exp(eps * Delta_u) while the normaliser shrinks by the same factor.
// Hence the two modes:
//   * kPaper:  log-weight_i = eps * u_i            guarantee 2 * eps * Delta_u
//   * kStrict: log-weight_i = eps * u_i / (2 Delta_u)   guarantee eps
//     (McSherry and Talwar's calibration; the default).
// ExponentialMechanismEpsilon() returns the TRUE guarantee so the caller can
// record it in the PrivacyLedger. Delta_u is a promise the caller makes
// about its score function (FedWalk never bounds it; a caller must clip
// scores or otherwise prove the bound), and strict mode is only as honest as
// that promise.
//
// A non-uniform base measure mu(r) fits by adding log mu(r) to the
// log-weights before sampling; it does not change the guarantee as long as
// mu does not depend on the private data.
#pragma once

#include <cstddef>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

struct ExponentialMechanismParams {
  double epsilon = 0.0;      // privacy parameter of Eq. 9/12; finite, > 0
  double sensitivity = 0.0;  // Delta_u of the score function; finite, > 0
  PrivacyMode mode = kDefaultPrivacyMode;
};

// The TRUE per-release guarantee of one draw: eps in strict mode,
// 2 * eps * Delta_u in paper mode (see the defect above). kInvalidArgument
// for a non-finite or non-positive epsilon or sensitivity; kOutOfRange if
// 2 * eps * Delta_u overflows a double.
Result<double> ExponentialMechanismEpsilon(const ExponentialMechanismParams& params);

// Turns scores u_i (higher is better, any finite real) into the log-weights
// the samplers take, scaled as the mode requires (see above). log_weights_out
// may alias scores (in-place conversion). Rejects with kInvalidArgument: bad
// params, empty input, size mismatch, a non-finite score; with kOutOfRange: a
// product that overflows. On error log_weights_out is left untouched.
Status ScoresToLogWeights(const ExponentialMechanismParams& params, Span<const double> scores,
                          Span<double> log_weights_out);

// Checks log-weights as the samplers understand them and returns the largest
// one (the shift that keeps exp() in range). A log-weight of -inf excludes its
// candidate; NaN or +inf, an empty span, or every entry -inf is
// kInvalidArgument.
Result<double> ValidateLogWeights(Span<const double> log_weights);

// Draws index i with probability exp(lw_i - m) / sum_j exp(lw_j - m), where m
// is the largest log-weight (so the largest term is exactly 1 and the sum lies
// in [1, n]: no overflow at +1e4, no all-zero underflow at -1e4).
//
// Cost per draw: O(n) time and 2n exp() calls (one pass to normalise, one to
// scan), plus one DRBG double; no storage. Use it for a distribution drawn
// once or a few times. When the same log-weights are drawn from repeatedly
// (FedWalk's encoder samples from the same row for every walk that visits a
// vertex), build an AliasTable (alias_table.h) once in O(n) and draw in O(1).
//
// Candidates with lw_i = -inf, or whose weight underflows relative to the
// largest (lw_i < m - ~745, probability below 1e-323), are never drawn. Errors:
// kInvalidArgument as in ValidateLogWeights; the DRBG's status if it failed
// (no index is released from a failed generator).
Result<size_t> SampleFromLogWeights(Drbg& rng, Span<const double> log_weights);

}  // namespace nodefl
