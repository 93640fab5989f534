// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "hct_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>

namespace nodefl::server::fedwalk::test {

void Seed(Drbg& rng, uint64_t seed, uint64_t stream) {
  if (!rng.SeedDeterministic(seed, stream).ok()) std::abort();
}

CondensedMatrix RandomMatrix(Drbg& rng, uint32_t n, uint32_t levels, double scale) {
  CondensedMatrix d(n);
  for (float& v : d.values()) {
    v = levels == 0 ? static_cast<float>(rng.UniformDouble() * scale) : static_cast<float>(rng.UniformBelow(levels));
  }
  return d;
}

std::vector<Merge> RandomMerges(Drbg& rng, uint32_t m, bool tied_heights) {
  std::vector<uint32_t> live(m);
  std::iota(live.begin(), live.end(), 0u);
  std::vector<uint32_t> size(m == 0 ? 0 : 2 * m - 1, 1);
  std::vector<Merge> merges;
  double height = 0;
  for (uint32_t i = 0; i + 1 < m; ++i) {
    const size_t p = rng.UniformBelow(live.size());
    size_t q = rng.UniformBelow(live.size() - 1);
    if (q >= p) ++q;
    const uint32_t a = std::min(live[p], live[q]);
    const uint32_t b = std::max(live[p], live[q]);
    height += tied_heights ? static_cast<double>(rng.UniformBelow(2)) : 0.25 + rng.UniformDouble();
    size[m + i] = size[a] + size[b];
    merges.push_back({a, b, height, size[m + i]});
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(std::max(p, q)));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(std::min(p, q)));
    live.push_back(m + i);
  }
  return merges;
}

std::vector<uint32_t> RandomLeafVertices(Drbg& rng, uint32_t m, uint32_t vertex_count) {
  std::vector<uint32_t> ids(vertex_count);
  std::iota(ids.begin(), ids.end(), 0u);
  for (uint32_t i = 0; i < m; ++i) {  // partial Fisher-Yates
    const uint32_t j = i + static_cast<uint32_t>(rng.UniformBelow(vertex_count - i));
    std::swap(ids[i], ids[j]);
  }
  ids.resize(m);
  return ids;
}

std::string CheckScipyLinkage(const std::vector<Merge>& merges, uint32_t n) {
  if (merges.size() != (n < 2 ? 0 : n - 1)) return "wrong merge count";
  std::vector<uint32_t> size(n < 2 ? n : 2 * n - 1, 1);
  std::vector<bool> used(size.size(), false);
  for (size_t i = 0; i < merges.size(); ++i) {
    const Merge& mg = merges[i];
    const std::string at = " at merge " + std::to_string(i);
    if (!(mg.a < mg.b)) return "a >= b" + at;
    if (mg.b >= n + i) return "refers to a node not yet made" + at;
    if (used[mg.a] || used[mg.b]) return "node used twice" + at;
    used[mg.a] = used[mg.b] = true;
    size[n + i] = size[mg.a] + size[mg.b];
    if (mg.size != size[n + i]) return "wrong size" + at;
    if (i > 0 && mg.height < merges[i - 1].height) return "height decreases" + at;
  }
  return "";
}

namespace {

uint32_t Find(std::vector<uint32_t>& parent, uint32_t i) {
  while (parent[i] != i) i = parent[i];
  return i;
}

}  // namespace

std::vector<uint32_t> PartitionAfter(const std::vector<Merge>& merges, uint32_t n, size_t count) {
  // representative[node] = some input under that node.
  std::vector<uint32_t> representative(n + merges.size());
  std::iota(representative.begin(), representative.begin() + n, 0u);
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t ra = Find(parent, representative[merges[i].a]);
    const uint32_t rb = Find(parent, representative[merges[i].b]);
    parent[std::max(ra, rb)] = std::min(ra, rb);  // root = smallest input
    representative[n + i] = std::min(ra, rb);
  }
  std::vector<uint32_t> label(n);
  for (uint32_t i = 0; i < n; ++i) label[i] = Find(parent, i);
  return label;
}

std::vector<std::vector<uint32_t>> NodeMembers(const std::vector<Merge>& merges, uint32_t n) {
  std::vector<std::vector<uint32_t>> members(n + merges.size());
  for (uint32_t i = 0; i < n; ++i) members[i] = {i};
  for (size_t i = 0; i < merges.size(); ++i) {
    auto& node = members[n + i];
    node = members[merges[i].a];
    node.insert(node.end(), members[merges[i].b].begin(), members[merges[i].b].end());
    std::sort(node.begin(), node.end());
  }
  return members;
}

double DefinitionDistance(const CondensedMatrix& d, const std::vector<uint32_t>& p,
                          const std::vector<uint32_t>& q, Linkage linkage) {
  double sum = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  for (uint32_t i : p) {
    for (uint32_t j : q) {
      sum += d.at(i, j);
      max = std::max<double>(max, d.at(i, j));
      min = std::min<double>(min, d.at(i, j));
    }
  }
  if (linkage == Linkage::kComplete) return max;
  if (linkage == Linkage::kSingle) return min;
  return sum / static_cast<double>(p.size() * q.size());
}

std::string CheckGreedyReplay(const CondensedMatrix& d, const std::vector<Merge>& merges, Linkage linkage,
                              double tolerance) {
  const uint32_t n = d.n();
  const auto members = NodeMembers(merges, n);
  std::vector<uint32_t> live(n);
  std::iota(live.begin(), live.end(), 0u);
  for (size_t i = 0; i < merges.size(); ++i) {
    double smallest = std::numeric_limits<double>::infinity();
    for (size_t p = 0; p < live.size(); ++p) {
      for (size_t q = p + 1; q < live.size(); ++q) {
        smallest = std::min(smallest, DefinitionDistance(d, members[live[p]], members[live[q]], linkage));
      }
    }
    const Merge& mg = merges[i];
    const double joined = DefinitionDistance(d, members[mg.a], members[mg.b], linkage);
    const double slack = tolerance * std::max(1.0, std::fabs(smallest));
    const std::string at = " at merge " + std::to_string(i);
    if (joined > smallest + slack) return "not a closest pair" + at;
    if (std::fabs(mg.height - joined) > slack) return "height is not the pair's distance" + at;
    const auto a = std::find(live.begin(), live.end(), mg.a);
    const auto b = std::find(live.begin(), live.end(), mg.b);
    if (a == live.end() || b == live.end()) return "joins a cluster that is not live" + at;
    live.erase(std::max(a, b));
    live.erase(std::min(a, b));
    live.push_back(n + static_cast<uint32_t>(i));
  }
  return "";
}

}  // namespace nodefl::server::fedwalk::test
