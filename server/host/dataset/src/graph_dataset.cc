// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/dataset/graph_dataset.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <utility>

namespace nodefl::dataset {
namespace {

struct Pair {
  uint32_t a;
  uint32_t b;
};

// Parses "a<TAB>b" (trailing '\r' tolerated). Returns an error text or empty.
std::string ParsePair(const std::string& line, Pair* out) {
  const char* begin = line.data();
  const char* end = line.data() + line.size();
  if (end > begin && end[-1] == '\r') --end;
  const char* tab = std::find(begin, end, '\t');
  if (tab == end) return "expected two tab-separated integers";
  auto [p1, e1] = std::from_chars(begin, tab, out->a);
  if (e1 != std::errc() || p1 != tab) return "first field is not a non-negative 32-bit integer";
  auto [p2, e2] = std::from_chars(tab + 1, end, out->b);
  if (e2 != std::errc() || p2 != end) return "second field is not a non-negative 32-bit integer";
  return {};
}

// Reads all pairs of a TSV file; nullopt with `error` set on failure.
std::optional<std::vector<Pair>> ReadPairs(const std::filesystem::path& file, std::string* error) {
  std::ifstream in(file);
  if (!in) {
    *error = file.string() + ": cannot open";
    return std::nullopt;
  }
  std::vector<Pair> pairs;
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    Pair p{};
    const std::string problem = ParsePair(line, &p);
    if (!problem.empty()) {
      *error = file.string() + ":" + std::to_string(line_no) + ": " + problem;
      return std::nullopt;
    }
    pairs.push_back(p);
  }
  if (in.bad()) {
    *error = file.string() + ": read error";
    return std::nullopt;
  }
  return pairs;
}

// Builds CSR from (node, value) pairs, values sorted per node.
void BuildCsr(uint32_t num_nodes, const std::vector<Pair>& pairs, std::vector<uint64_t>* offsets,
              std::vector<uint32_t>* values) {
  offsets->assign(num_nodes + 1, 0);
  for (const Pair& p : pairs) ++(*offsets)[p.a + 1];
  for (uint32_t v = 0; v < num_nodes; ++v) (*offsets)[v + 1] += (*offsets)[v];
  values->assign(pairs.size(), 0);
  std::vector<uint64_t> cursor(offsets->begin(), offsets->end() - 1);
  for (const Pair& p : pairs) (*values)[cursor[p.a]++] = p.b;
  for (uint32_t v = 0; v < num_nodes; ++v) {
    std::sort(values->begin() + static_cast<std::ptrdiff_t>((*offsets)[v]),
              values->begin() + static_cast<std::ptrdiff_t>((*offsets)[v + 1]));
  }
}

}  // namespace

LoadResult LoadGraph(const std::filesystem::path& directory) {
  LoadResult result;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    result.error = directory.string() + ": not a directory";
    return result;
  }
  std::string error;
  auto edges = ReadPairs(directory / "edges.tsv", &error);
  if (!edges) {
    result.error = error;
    return result;
  }
  std::vector<Pair> labels, features;
  for (auto [name, target] : {std::pair{"labels.tsv", &labels}, std::pair{"features.tsv", &features}}) {
    const auto path = directory / name;
    if (!std::filesystem::exists(path, ec)) continue;
    auto pairs = ReadPairs(path, &error);
    if (!pairs) {
      result.error = error;
      return result;
    }
    *target = std::move(*pairs);
  }

  uint64_t max_id = 0;
  bool any = false;
  for (const Pair& e : *edges) {
    max_id = std::max<uint64_t>({max_id, e.a, e.b});
    any = true;
  }
  for (const auto* list : {&labels, &features}) {
    for (const Pair& p : *list) {
      max_id = std::max<uint64_t>(max_id, p.a);
      any = true;
    }
  }
  if (!any) {
    result.error = (directory / "edges.tsv").string() + ": no edges";
    return result;
  }
  if (max_id >= UINT32_MAX) {
    result.error = directory.string() + ": node id too large";
    return result;
  }
  Graph& g = result.graph;
  g.name = directory.filename().string();
  g.num_nodes = static_cast<uint32_t>(max_id + 1);

  std::vector<Pair> directed;
  directed.reserve(edges->size() * 2);
  for (size_t i = 0; i < edges->size(); ++i) {
    const Pair e = (*edges)[i];
    if (e.a == e.b) {
      result.error = (directory / "edges.tsv").string() + ": self loop on node " +
                     std::to_string(e.a) + " (edge " + std::to_string(i + 1) + ")";
      return result;
    }
    directed.push_back({e.a, e.b});
    directed.push_back({e.b, e.a});
  }
  BuildCsr(g.num_nodes, directed, &g.offsets, &g.neighbours);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    for (uint64_t i = g.offsets[v] + 1; i < g.offsets[v + 1]; ++i) {
      if (g.neighbours[i] == g.neighbours[i - 1]) {
        result.error = (directory / "edges.tsv").string() + ": duplicate edge " +
                       std::to_string(v) + "-" + std::to_string(g.neighbours[i]);
        return result;
      }
    }
  }
  g.num_edges = edges->size();

  BuildCsr(g.num_nodes, labels, &g.label_offsets, &g.labels);
  for (uint32_t l : g.labels) g.num_label_classes = std::max(g.num_label_classes, l + 1);
  if (!features.empty()) {
    BuildCsr(g.num_nodes, features, &g.feature_offsets, &g.features);
    for (uint32_t f : g.features) g.num_feature_dims = std::max(g.num_feature_dims, f + 1);
  }
  result.ok = true;
  return result;
}

Graph GeneratePlantedPartition(uint32_t communities, uint32_t block_size, double p_in,
                               double p_out, uint64_t seed) {
  // SplitMix64: a tiny, fully specified generator so the graph is identical
  // on every platform and library version (host-side data generation only).
  uint64_t state = seed;
  auto next_unit = [&state]() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  };
  Graph g;
  g.name = "planted-partition";
  g.num_nodes = communities * block_size;
  std::vector<Pair> directed, labels;
  for (uint32_t u = 0; u < g.num_nodes; ++u) {
    labels.push_back({u, u / block_size});
    for (uint32_t v = u + 1; v < g.num_nodes; ++v) {
      const double p = (u / block_size == v / block_size) ? p_in : p_out;
      if (next_unit() < p) {
        directed.push_back({u, v});
        directed.push_back({v, u});
        ++g.num_edges;
      }
    }
  }
  BuildCsr(g.num_nodes, directed, &g.offsets, &g.neighbours);
  BuildCsr(g.num_nodes, labels, &g.label_offsets, &g.labels);
  g.num_label_classes = communities;
  return g;
}

std::vector<std::pair<uint32_t, uint32_t>> UndirectedEdges(const Graph& g) {
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(g.num_edges);
  for (uint32_t u = 0; u < g.num_nodes; ++u) {
    for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) {
      if (u < g.neighbours[i]) edges.push_back({u, g.neighbours[i]});
    }
  }
  return edges;
}

std::vector<std::vector<uint32_t>> NeighbourLists(const Graph& g) {
  std::vector<std::vector<uint32_t>> lists(g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    lists[v].assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                    g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
  }
  return lists;
}

}  // namespace nodefl::dataset
