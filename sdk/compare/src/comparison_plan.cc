// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/comparison_plan.h"

namespace nodefl::compare {

uint32_t ComparisonPlan::TableOffset(uint32_t d) const {
  uint32_t offset = 0;
  for (uint32_t k = 0; k < d; ++k) offset += 2u << DigitBits(k);
  return offset;
}

Result<ComparisonPlan> PlanComparison(uint32_t width, uint32_t digit_bits) {
  if (width < 1 || width > kMaxWidth) return Status::InvalidArgument();
  if (digit_bits == 0) digit_bits = width <= 8 ? width : 4;
  if (digit_bits > kMaxDigitBits) return Status::InvalidArgument();
  if (digit_bits > width) digit_bits = width;
  const uint32_t digits = (width + digit_bits - 1) / digit_bits;
  if (digits > kMaxDigits) return Status::InvalidArgument();
  ComparisonPlan p;
  p.width = static_cast<uint8_t>(width);
  p.digit_bits = static_cast<uint8_t>(digit_bits);
  p.digits = static_cast<uint8_t>(digits);
  p.top_digit_bits = static_cast<uint8_t>(width - (digits - 1) * digit_bits);
  p.ands = static_cast<uint8_t>(2 * (digits - 1));
  p.ots = static_cast<uint16_t>(width + 2u * p.ands);
  uint32_t table_bits = 0;
  for (uint32_t d = 0; d < digits; ++d) table_bits += 2u << p.DigitBits(d);
  p.table_bits = static_cast<uint16_t>(table_bits);
  uint32_t nodes = digits, level = 0, and_index = 0;
  while (nodes > 1) {
    ++level;
    p.nodes_before[level] = static_cast<uint8_t>(nodes);
    p.combinations[level] = static_cast<uint8_t>(nodes / 2);
    p.first_and[level] = static_cast<uint8_t>(and_index);
    and_index += 2 * (nodes / 2);
    nodes = (nodes + 1) / 2;
  }
  p.depth = static_cast<uint8_t>(level);
  return p;
}

}  // namespace nodefl::compare
