// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/aggregator.h"

namespace nodefl::server::kcagc {

Result<std::vector<float>> Aggregator::Sum(std::span<const std::vector<float>> inputs,
                                           const nodefl::secagg::FixedPoint& code) {
  if (inputs.empty()) return Status::InvalidArgument();
  const size_t length = inputs.front().size();
  for (const auto& v : inputs) {
    if (v.size() != length) return Status::InvalidArgument();
  }
  const uint64_t capacity = nodefl::secagg::MaxSummands(code);
  if (capacity == 0) return Status::InvalidArgument();
  if (inputs.size() > capacity) return Status::FailedPrecondition();
  uint64_t clipped = 0;
  Result<std::vector<float>> sum = Aggregate(inputs, code, &clipped);
  if (!sum.ok()) return sum;
  counters_.rounds += 1;
  counters_.scalars += length;
  counters_.uploaded_bytes += 4u * length * inputs.size();
  counters_.clipped += clipped;
  return sum;
}

Result<std::vector<float>> SimulatedSecureAggregator::Aggregate(std::span<const std::vector<float>> inputs,
                                                               const nodefl::secagg::FixedPoint& code, uint64_t* clipped) {
  const size_t length = inputs.front().size();
  std::vector<uint32_t> total(length, 0u), codes(length);
  for (const auto& v : inputs) {
    Result<size_t> c = nodefl::secagg::EncodeFixedPoint(code, Span<const float>(v.data(), v.size()),
                                                Span<uint32_t>(codes.data(), codes.size()));
    if (!c.ok()) return c.status();
    *clipped += c.value();
    for (size_t i = 0; i < length; ++i) total[i] += codes[i];  // mod 2^32, as the ring does
  }
  std::vector<float> out(length);
  NODEFL_TRY(nodefl::secagg::DecodeFixedPointSum(code, Span<const uint32_t>(total.data(), total.size()),
                                         Span<float>(out.data(), out.size())));
  return out;
}

}  // namespace nodefl::server::kcagc
