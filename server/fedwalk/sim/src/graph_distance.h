// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The walk simulation's ground truth: how two vertices sit in the true
// graph (same, adjacent, exactly two hops apart, farther). Only the
// simulation knows the graph; no party of the protocol does.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/server/fedwalk/sim/walk_simulation.h"

namespace nodefl::server::fedwalk::walk_sim {

class GraphDistance {
 public:
  // `neighbours`: sorted lists (must outlive this object).
  explicit GraphDistance(const std::vector<std::vector<uint32_t>>& neighbours) : neighbours_(neighbours) {}

  bool Adjacent(uint32_t a, uint32_t b) const;
  // a != b, not adjacent, and some vertex is adjacent to both.
  bool TwoHops(uint32_t a, uint32_t b) const;
  // Adds (a, b) to the matching class of `counts`.
  void Count(uint32_t a, uint32_t b, DistanceCounts* counts) const;

 private:
  const std::vector<std::vector<uint32_t>>& neighbours_;
};

}  // namespace nodefl::server::fedwalk::walk_sim
