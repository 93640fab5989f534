// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The range round (nodefl/kcagc/range.h) among participants in one
// process: each participant's bound on what it will submit (B_l for the
// distances of Protocols 2 and 3, G_l for the joint mode's products),
// rounded up to the range code's grid, goes through one secure sum of one
// scalar each; the server widens the sum into the public clip and derives
// the working code from it. Every mode with secure sums starts with it.
#pragma once

#include <span>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/kcagc/aggregator.h"

namespace nodefl::server::kcagc {

struct RangeRoundResult {
  std::vector<double> bounds;  // each participant's own (the server learns only their sum)
  float clip = 0.0f;
  nodefl::secagg::FixedPoint code;  // the working code for every later sum
};

// kInvalidArgument for no participants; kOutOfRange when a bound exceeds
// the range code's clip (features too large; range.h).
[[nodiscard]] Result<RangeRoundResult> RunRangeRound(std::span<const double> bounds, Aggregator* aggregator);

}  // namespace nodefl::server::kcagc
