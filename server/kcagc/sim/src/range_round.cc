// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/sim/range_round.h"

#include "nodefl/kcagc/range.h"

namespace nodefl::server::kcagc {

Result<RangeRoundResult> RunRangeRound(std::span<const double> bounds, Aggregator* aggregator) {
  if (bounds.empty() || aggregator == nullptr) return Status::InvalidArgument();
  const auto parties = static_cast<uint32_t>(bounds.size());
  NODEFL_TRY_ASSIGN(const nodefl::secagg::FixedPoint range_code, nodefl::kcagc::RangeCode(parties));
  RangeRoundResult out;
  std::vector<std::vector<float>> inputs(parties);
  for (uint32_t l = 0; l < parties; ++l) {
    out.bounds.push_back(bounds[l]);
    NODEFL_TRY_ASSIGN(const float submitted, nodefl::kcagc::RangeSubmission(bounds[l], range_code));
    inputs[l] = {submitted};
  }
  NODEFL_TRY_ASSIGN(const std::vector<float> sum, aggregator->Sum(inputs, range_code));
  out.clip = nodefl::kcagc::ClipFromRangeSum(sum[0]);
  NODEFL_TRY_ASSIGN(out.code, nodefl::kcagc::CodeForClip(out.clip, parties));
  return out;
}

}  // namespace nodefl::server::kcagc
