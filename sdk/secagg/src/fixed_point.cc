// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/fixed_point.h"

#include <cmath>

namespace nodefl::secagg {
namespace {

constexpr double kTwo31 = 2147483648.0;

bool Valid(const FixedPoint& c) {
  return std::isfinite(c.clip) && std::isfinite(c.scale) && c.clip > 0.0f && c.scale > 0.0f &&
         double{c.clip} * c.scale < kTwo31;
}

}  // namespace

uint64_t MaxSummands(const FixedPoint& code) {
  if (!Valid(code)) return 0;
  // The largest code is round(clip * scale); n of them must stay below 2^31.
  double largest = std::nearbyint(double{code.clip} * code.scale);
  if (largest < 1.0) largest = 1.0;  // codes of 0 (or 1 after rounding up): bound as 1
  return static_cast<uint64_t>(std::floor((kTwo31 - 1.0) / largest));
}

Result<size_t> EncodeFixedPoint(const FixedPoint& code, Span<const float> x, Span<uint32_t> out) {
  if (!Valid(code) || x.size() != out.size()) return Status::InvalidArgument();
  size_t clipped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float v = x[i];
    if (std::isnan(v)) return Status::InvalidArgument();
    if (v > code.clip || v < -code.clip) {
      v = v > 0 ? code.clip : -code.clip;
      ++clipped;
    }
    const auto q = static_cast<int64_t>(std::nearbyint(double{v} * code.scale));  // |q| < 2^31
    out[i] = static_cast<uint32_t>(q);  // two's complement, mod 2^32
  }
  return clipped;
}

Status DecodeFixedPointSum(const FixedPoint& code, Span<const uint32_t> sum, Span<float> out) {
  if (!Valid(code) || sum.size() != out.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < sum.size(); ++i) {
    const int64_t s = sum[i] >= 0x80000000u ? int64_t{sum[i]} - (int64_t{1} << 32) : int64_t{sum[i]};
    out[i] = static_cast<float>(static_cast<double>(s) / code.scale);
  }
  return Status::Ok();
}

}  // namespace nodefl::secagg
