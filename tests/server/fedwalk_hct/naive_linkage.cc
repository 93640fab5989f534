// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The textbook greedy agglomeration, kept deliberately independent of the
// nearest-neighbour chain: no Lance-Williams updates, no float storage of
// intermediate distances. Tests compare the two.
#include "naive_linkage.h"

#include <algorithm>
#include <limits>

namespace nodefl::server::fedwalk {
namespace {

// Distance between two clusters by the definition of the linkage, over
// the original point distances.
double ClusterDistance(const CondensedMatrix& d, const std::vector<uint32_t>& p,
                       const std::vector<uint32_t>& q, Linkage linkage) {
  double sum = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  for (uint32_t i : p) {
    for (uint32_t j : q) {
      const double v = d.at(i, j);
      sum += v;
      max = std::max(max, v);
      min = std::min(min, v);
    }
  }
  switch (linkage) {
    case Linkage::kAverage:
      return sum / (static_cast<double>(p.size()) * static_cast<double>(q.size()));
    case Linkage::kComplete:
      return max;
    case Linkage::kSingle:
      return min;
  }
  return sum;
}

}  // namespace

std::optional<std::vector<Merge>> ClusterNaive(const CondensedMatrix& d, Linkage linkage) {
  if (!AllFinite(d)) return std::nullopt;
  const uint32_t n = d.n();
  std::vector<Merge> merges;
  if (n < 2) return merges;
  const uint32_t nodes = 2 * n - 1;
  // members[id]: the inputs under node id; dist[id * nodes + other] the
  // current distance between two live clusters.
  std::vector<std::vector<uint32_t>> members(nodes);
  std::vector<double> dist(size_t{nodes} * nodes, 0.0);
  std::vector<uint32_t> live;
  for (uint32_t i = 0; i < n; ++i) {
    members[i] = {i};
    live.push_back(i);
    for (uint32_t j = 0; j < n; ++j) dist[size_t{i} * nodes + j] = d.at(i, j);
  }
  for (uint32_t step = 0; step + 1 < n; ++step) {
    // `live` is ascending (new ids are the largest), so scanning pairs in
    // order with a strict < keeps the smallest (a, b) among ties.
    double best = std::numeric_limits<double>::infinity();
    size_t best_i = 0;
    size_t best_j = 1;
    for (size_t i = 0; i < live.size(); ++i) {
      for (size_t j = i + 1; j < live.size(); ++j) {
        const double v = dist[size_t{live[i]} * nodes + live[j]];
        if (v < best) {
          best = v;
          best_i = i;
          best_j = j;
        }
      }
    }
    const uint32_t a = live[best_i];
    const uint32_t b = live[best_j];
    const uint32_t id = n + step;
    members[id] = members[a];
    members[id].insert(members[id].end(), members[b].begin(), members[b].end());
    merges.push_back({a, b, best, static_cast<uint32_t>(members[id].size())});
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(best_j));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(best_i));
    for (uint32_t other : live) {
      const double v = ClusterDistance(d, members[id], members[other], linkage);
      dist[size_t{id} * nodes + other] = v;
      dist[size_t{other} * nodes + id] = v;
    }
    live.push_back(id);
  }
  return merges;
}

}  // namespace nodefl::server::fedwalk
