// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/common/bin_plan.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {

uint8_t DefaultBins(size_t vertices) {
  const double k = std::floor(std::log(static_cast<double>(std::max<size_t>(vertices, 1))));
  return static_cast<uint8_t>(std::clamp(k, 1.0, static_cast<double>(nodefl::fedwalk::kMaxBins)));
}

std::vector<uint8_t> MakeBinPlan(const std::vector<uint32_t>& participants, uint32_t vertex_count, uint32_t bins,
                                 uint64_t seed) {
  std::vector<uint32_t> order = participants;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint8_t> plan(vertex_count, nodefl::fedwalk::kAbsentBin);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    plan[order[rank]] = static_cast<uint8_t>(rank * bins / order.size());
  }
  return plan;
}

}  // namespace nodefl::server::fedwalk
