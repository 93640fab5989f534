// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/laplace.h"

#include <cmath>

#include "nodefl/core/assert.h"

namespace nodefl {

double SampleLaplace(Drbg& rng, double scale) {
  NODEFL_CHECK(std::isfinite(scale) && scale > 0.0);
  // |X| ~ Exp(1/scale) and the sign is a separate fair bit: that keeps the
  // whole 52-bit resolution of U for the magnitude, where the one-uniform
  // inverse CDF would spend one of those bits on the sign.
  const double magnitude = -std::log(rng.UniformOpenDouble()) * scale;
  const bool negative = (rng.NextU32() & 1u) != 0;
  return negative ? -magnitude : magnitude;
}

Result<double> LaplaceMechanism(Drbg& rng, double value, double l1_sensitivity, double epsilon) {
  if (!std::isfinite(value)) return Status::InvalidArgument();
  if (!std::isfinite(l1_sensitivity) || !(l1_sensitivity > 0.0)) return Status::InvalidArgument();
  if (!std::isfinite(epsilon) || !(epsilon > 0.0)) return Status::InvalidArgument();
  const double scale = l1_sensitivity / epsilon;
  // A scale of inf or 0 would release pure noise or the raw value.
  if (!std::isfinite(scale) || !(scale > 0.0)) return Status::InvalidArgument();
  const double noise = SampleLaplace(rng, scale);
  NODEFL_TRY(rng.status());
  const double noised = value + noise;
  if (!std::isfinite(noised)) return Status::OutOfRange();
  return noised;
}

}  // namespace nodefl
