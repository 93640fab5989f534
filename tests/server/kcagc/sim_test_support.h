// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the kCAGC simulation's tests share: a dataset's feature columns cut
// into participants' slices, its labels, and the simulated secure
// aggregation checking every submitted value against its round's clip.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/sim/features.h"

namespace nodefl::server::kcagc {

// The unfiltered slices of `parties` participants, split as the runs split.
inline std::vector<nodefl::kcagc::Matrix> Slices(const dataset::Graph& g, uint32_t parties, uint64_t seed) {
  std::vector<nodefl::kcagc::Matrix> out;
  for (const auto& c : SplitColumns(g.num_feature_dims, parties, seed)) out.push_back(DenseSlice(g, c));
  return out;
}

inline std::vector<int32_t> Labels(const dataset::Graph& g) {
  std::vector<int32_t> labels;
  EXPECT_TRUE(SingleLabels(g, &labels));
  return labels;
}

// Nothing is ever clipped, the range rules promise: this checks it.
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
