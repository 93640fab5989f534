// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ComparisonPlan: the shape of one secure comparison of two unsigned
// integers of `width` bits, x (party A) against y (party B).
//
// The inputs are cut into `digits` digits of `digit_bits` bits (the most
// significant digit, index 0, takes what is left: `top_digit_bits`). Per
// digit one 1-out-of-2^w oblivious transfer gives XOR shares of
// [x_d > y_d] and [x_d = y_d]; a tree of combinations
//   gt = gt_high ^ (eq_high & gt_low),  eq = eq_high & eq_low
// folds adjacent digits, two ANDs (Beaver triples) per combination,
// `depth` levels. A 1-out-of-2^w OT is built from w random OTs (one per
// bit of the receiver's digit), a triple from two.
//
// Widths up to 8 default to a single digit: one 1-out-of-2^width OT and no
// AND at all (the receiver learns its masked result bits directly). Wider
// inputs default to 4-bit digits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/core/result.h"

namespace nodefl::compare {

inline constexpr uint32_t kMaxWidth = kMaxCompareWidth;          // the contract's bounds
inline constexpr uint32_t kMaxDigitBits = kMaxCompareDigitBits;
inline constexpr uint32_t kMaxDigits = 32;
inline constexpr uint32_t kMaxDepth = 5;    // ceil(log2(kMaxDigits))
inline constexpr uint32_t kMaxAnds = 2 * (kMaxDigits - 1);

struct ComparisonPlan {
  uint8_t width = 0;
  uint8_t digit_bits = 0;
  uint8_t digits = 0;
  uint8_t top_digit_bits = 0;
  uint8_t depth = 0;
  uint8_t ands = 0;              // 2 * (digits - 1)
  uint16_t ots = 0;              // width + 2 * ands
  uint16_t table_bits = 0;       // sum over digits of 2 * 2^w
  // Per level 1..depth: nodes before the level and combinations in it.
  uint8_t nodes_before[kMaxDepth + 1] = {};
  uint8_t combinations[kMaxDepth + 1] = {};
  uint8_t first_and[kMaxDepth + 1] = {};  // index of the level's first AND

  uint8_t DigitBits(uint32_t d) const { return d == 0 ? top_digit_bits : digit_bits; }
  // First OT of digit d within a comparison (digits are laid out from the
  // most significant; bit b of the digit is OT FirstOt(d) + b).
  uint16_t FirstOt(uint32_t d) const { return d == 0 ? 0 : static_cast<uint16_t>(top_digit_bits + (d - 1) * digit_bits); }
  // The digit whose bits OT `o` (< width) chooses.
  uint32_t DigitOfOt(uint32_t o) const {
    uint32_t d = 0;
    while (d + 1 < digits && FirstOt(d + 1) <= o) ++d;
    return d;
  }
  // Digit d of v.
  uint32_t Digit(uint32_t v, uint32_t d) const {
    const uint32_t shift = (digits - 1 - d) * digit_bits;
    return (v >> shift) & ((1u << DigitBits(d)) - 1u);
  }
  // First bit of digit d's table within a comparison's table bits.
  uint32_t TableOffset(uint32_t d) const;
  uint32_t table_bytes() const { return (table_bits + 7u) / 8u; }
  uint32_t MaxValue() const { return width == 32 ? 0xFFFFFFFFu : (1u << width) - 1u; }
};

// kInvalidArgument for width outside 1..32 or digit_bits outside 1..8
// (0 picks the default described above) or more than kMaxDigits digits.
Result<ComparisonPlan> PlanComparison(uint32_t width, uint32_t digit_bits = 0);

}  // namespace nodefl::compare
