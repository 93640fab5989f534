// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/intersections.h"

#include <unordered_map>
#include <vector>

namespace nodefl::server::kcagc {

using nodefl::kcagc::Assignment;
using nodefl::kcagc::Intersections;

Result<Intersections> Intersect(std::span<const Assignment> parts) {
  if (parts.empty()) return Status::InvalidArgument();
  const size_t n = parts.front().size();
  for (const Assignment& a : parts) {
    if (a.size() != n) return Status::InvalidArgument();
    for (int32_t c : a) {
      if (c < 0) return Status::InvalidArgument();
    }
  }
  // group[v]: v's intersection so far; keys[g]: the clusters behind g.
  std::vector<uint32_t> group(n, 0);
  std::vector<std::vector<int32_t>> keys(n == 0 ? 0 : 1);
  for (size_t p = 0; p < parts.size(); ++p) {
    std::unordered_map<uint64_t, uint32_t> next_id;
    std::vector<std::vector<int32_t>> next_keys;
    for (size_t v = 0; v < n; ++v) {
      const uint64_t pair = (uint64_t{group[v]} << 32) | static_cast<uint32_t>(parts[p][v]);
      auto [it, fresh] = next_id.emplace(pair, static_cast<uint32_t>(next_keys.size()));
      if (fresh) {
        next_keys.push_back(keys[group[v]]);
        next_keys.back().push_back(parts[p][v]);
      }
      group[v] = it->second;
    }
    keys = std::move(next_keys);
  }
  // Groups are numbered in order of their smallest node already (nodes are
  // visited in order); lay them out as CSR.
  Intersections out;
  out.parts = static_cast<uint32_t>(parts.size());
  const auto count = static_cast<uint32_t>(keys.size());
  out.offsets.assign(count + 1, 0);
  for (size_t v = 0; v < n; ++v) ++out.offsets[group[v] + 1];
  for (uint32_t g = 0; g < count; ++g) out.offsets[g + 1] += out.offsets[g];
  out.nodes.resize(n);
  std::vector<uint32_t> fill(out.offsets.begin(), out.offsets.end() - 1);
  for (size_t v = 0; v < n; ++v) out.nodes[fill[group[v]]++] = static_cast<uint32_t>(v);
  out.keys.reserve(static_cast<size_t>(count) * out.parts);
  for (const auto& k : keys) out.keys.insert(out.keys.end(), k.begin(), k.end());
  return out;
}

Assignment SpreadToNodes(const Intersections& groups, const Assignment& group_clusters, uint32_t nodes) {
  Assignment out(nodes, nodefl::kcagc::kUnassigned);
  for (uint32_t g = 0; g < groups.size() && g < group_clusters.size(); ++g) {
    for (uint32_t e = groups.offsets[g]; e < groups.offsets[g + 1]; ++e) out[groups.nodes[e]] = group_clusters[g];
  }
  return out;
}

}  // namespace nodefl::server::kcagc
