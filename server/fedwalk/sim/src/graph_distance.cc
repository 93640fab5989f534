// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "graph_distance.h"

#include <algorithm>

namespace nodefl::server::fedwalk {

DistanceCounts& DistanceCounts::operator+=(const DistanceCounts& o) {
  same += o.same;
  edge += o.edge;
  two_hop += o.two_hop;
  farther += o.farther;
  return *this;
}

namespace walk_sim {

bool GraphDistance::Adjacent(uint32_t a, uint32_t b) const {
  // Search the shorter list: hubs have thousands of neighbours.
  const std::vector<uint32_t>& na = neighbours_[a];
  const std::vector<uint32_t>& nb = neighbours_[b];
  return na.size() <= nb.size() ? std::binary_search(na.begin(), na.end(), b)
                                : std::binary_search(nb.begin(), nb.end(), a);
}

bool GraphDistance::TwoHops(uint32_t a, uint32_t b) const {
  if (a == b || Adjacent(a, b)) return false;
  const std::vector<uint32_t>* small = &neighbours_[a];
  const std::vector<uint32_t>* large = &neighbours_[b];
  if (small->size() > large->size()) std::swap(small, large);
  // Walk the shorter list and search the longer one: O(min log max), which
  // beats a merge when one end is a hub (BlogCatalog: degree 3,992).
  for (uint32_t x : *small) {
    if (std::binary_search(large->begin(), large->end(), x)) return true;
  }
  return false;
}

void GraphDistance::Count(uint32_t a, uint32_t b, DistanceCounts* counts) const {
  if (a == b) {
    ++counts->same;
  } else if (Adjacent(a, b)) {
    ++counts->edge;
  } else if (TwoHops(a, b)) {
    ++counts->two_hop;
  } else {
    ++counts->farther;
  }
}

}  // namespace walk_sim
}  // namespace nodefl::server::fedwalk
