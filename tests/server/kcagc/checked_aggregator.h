// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The simulated secure aggregation (fixed-point codes summed as the service
// sums them), checking every submitted value against its round's clip: the
// range rules promise that nothing is ever clipped.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/server/kcagc/aggregator.h"

namespace nodefl::server::kcagc {

class CheckedAggregator final : public Aggregator {
 public:
  uint64_t over_clip = 0;
  // max |value| / clip over the working-code rounds (not the range round,
  // whose public code has clip 2^16 whatever the data).
  double largest_share = 0;

 protected:
  Result<std::vector<float>> Aggregate(std::span<const std::vector<float>> inputs,
                                       const nodefl::secagg::FixedPoint& code, uint64_t* clipped) override {
    for (const auto& v : inputs) {
      for (const float x : v) {
        if (std::abs(x) > code.clip) ++over_clip;
        if (code.clip < 65536.0f) largest_share = std::max(largest_share, std::abs(double{x}) / code.clip);
      }
    }
    const uint64_t before = inner_.counters().clipped;
    Result<std::vector<float>> sum = inner_.Sum(inputs, code);
    *clipped += inner_.counters().clipped - before;
    return sum;
  }

 private:
  SimulatedSecureAggregator inner_;
};

}  // namespace nodefl::server::kcagc
