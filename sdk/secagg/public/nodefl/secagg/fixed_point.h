// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Float vectors as integers mod 2^32, the ring secure aggregation sums in:
// q = round(clip(x, -clip, clip) * scale), stored in two's complement. The
// sum of n such codes decodes exactly (as a signed 32-bit value / scale)
// while n * clip * scale < 2^31 (MaxSummands); past that it wraps, so a
// caller picks clip and scale for its fleet and refuses larger ones. Each
// value is off by at most 1 / (2 scale) after rounding, so a sum of n by
// n / (2 scale); clipping is the only other change to the input, and the
// caller says what it clipped (Encode counts it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::secagg {

struct FixedPoint {
  float clip = 1.0f;      // |x| is clipped to this
  float scale = 65536.0f;  // codes per unit
};

// The largest n whose sum of codes cannot wrap; 0 for a bad code
// (non-positive or non-finite clip or scale, or clip * scale >= 2^31).
uint64_t MaxSummands(const FixedPoint& code);

// out[i] = the code of x[i]. kInvalidArgument for a bad code or sizes that
// differ; a NaN is refused, not clipped. Returns how many values were
// clipped.
[[nodiscard]] Result<size_t> EncodeFixedPoint(const FixedPoint& code, Span<const float> x, Span<uint32_t> out);

// out[i] = sum[i] read as a signed 32-bit value, / scale. kInvalidArgument
// for a bad code or sizes that differ.
[[nodiscard]] Status DecodeFixedPointSum(const FixedPoint& code, Span<const uint32_t> sum, Span<float> out);

}  // namespace nodefl::secagg
