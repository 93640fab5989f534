// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/exponential_mechanism.h"

#include <cmath>
#include <limits>

namespace nodefl {
namespace {

Status ValidateParams(const ExponentialMechanismParams& params) {
  if (!std::isfinite(params.epsilon) || !(params.epsilon > 0.0)) return Status::InvalidArgument();
  if (!std::isfinite(params.sensitivity) || !(params.sensitivity > 0.0)) {
    return Status::InvalidArgument();
  }
  if (params.mode != PrivacyMode::kStrict && params.mode != PrivacyMode::kPaper) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

// Multiplier from score to log-weight. Strict mode divides by 2 * Delta_u so
// that a Delta_u shift of every score moves each log-probability by at most
// eps (eps / 2 from the numerator, eps / 2 from the normaliser).
Result<double> LogWeightScale(const ExponentialMechanismParams& params) {
  NODEFL_TRY(ValidateParams(params));
  if (params.mode == PrivacyMode::kPaper) return params.epsilon;
  const double scale = params.epsilon / (2.0 * params.sensitivity);
  // A subnormal sensitivity can push the scale past the double range.
  if (!std::isfinite(scale)) return Status::OutOfRange();
  return scale;
}

}  // namespace

Result<double> ExponentialMechanismEpsilon(const ExponentialMechanismParams& params) {
  NODEFL_TRY(ValidateParams(params));
  if (params.mode == PrivacyMode::kStrict) return params.epsilon;
  const double spent = 2.0 * params.epsilon * params.sensitivity;
  if (!std::isfinite(spent)) return Status::OutOfRange();
  return spent;
}

Status ScoresToLogWeights(const ExponentialMechanismParams& params, Span<const double> scores,
                          Span<double> log_weights_out) {
  NODEFL_TRY_ASSIGN(const double scale, LogWeightScale(params));
  if (scores.empty() || scores.size() != log_weights_out.size()) return Status::InvalidArgument();
  // Check everything before writing, so a rejected call leaves the output as
  // it was and an in-place call does not half-convert the scores.
  for (const double u : scores) {
    if (!std::isfinite(u)) return Status::InvalidArgument();
    // -inf here would silently exclude a candidate the caller scored.
    if (!std::isfinite(scale * u)) return Status::OutOfRange();
  }
  for (size_t i = 0; i < scores.size(); ++i) log_weights_out[i] = scale * scores[i];
  return Status::Ok();
}

Result<double> ValidateLogWeights(Span<const double> log_weights) {
  if (log_weights.empty()) return Status::InvalidArgument();
  double max = -std::numeric_limits<double>::infinity();
  for (const double lw : log_weights) {
    // NaN fails both comparisons, so test it by name.
    if (std::isnan(lw) || lw == std::numeric_limits<double>::infinity()) {
      return Status::InvalidArgument();
    }
    if (lw > max) max = lw;
  }
  if (max == -std::numeric_limits<double>::infinity()) return Status::InvalidArgument();
  return max;
}

Result<size_t> SampleFromLogWeights(Drbg& rng, Span<const double> log_weights) {
  NODEFL_TRY_ASSIGN(const double max, ValidateLogWeights(log_weights));
  double total = 0.0;
  for (const double lw : log_weights) total += std::exp(lw - max);
  const double target = rng.UniformDouble() * total;
  NODEFL_TRY(rng.status());

  // The scan recomputes the same terms in the same order, so its running sum
  // ends exactly at `total`. A zero-weight candidate never raises the running
  // sum, so the strict comparison can never stop on it.
  double running = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < log_weights.size(); ++i) {
    const double w = std::exp(log_weights[i] - max);
    if (w == 0.0) continue;
    running += w;
    last_positive = i;
    if (running > target) return i;
  }
  // target * total can round up to total itself; that mass belongs to the
  // last candidate that has any.
  return last_positive;
}

}  // namespace nodefl
