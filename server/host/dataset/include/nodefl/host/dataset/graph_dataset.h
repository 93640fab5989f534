// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Reader for the shared TSV dataset layout (../shared/datasets/NAME/):
//   edges.tsv     "u<TAB>v" per line, 0-based ids, each undirected edge once
//   labels.tsv    "node<TAB>label", several lines for multi-label nodes
//   features.tsv  "node<TAB>feature" binary sparse features (optional)
// Host-side only (the emulator splits the graph into per-device ego networks;
// no device ever sees this structure). Every malformed line is reported with
// its file and line number instead of being skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nodefl::dataset {

struct Graph {
  uint32_t num_nodes = 0;
  uint64_t num_edges = 0;  // undirected edges
  // CSR adjacency, neighbours of v in sorted order:
  // neighbours[offsets[v] .. offsets[v+1]).
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> neighbours;
  // labels_offsets/labels: CSR of each node's labels (may be empty).
  std::vector<uint64_t> label_offsets;
  std::vector<uint32_t> labels;
  uint32_t num_label_classes = 0;
  // Sparse binary features (CSR), empty when the dataset has none.
  std::vector<uint64_t> feature_offsets;
  std::vector<uint32_t> features;
  uint32_t num_feature_dims = 0;
  std::string name;

  uint32_t degree(uint32_t v) const { return static_cast<uint32_t>(offsets[v + 1] - offsets[v]); }
};

struct LoadResult {
  bool ok = false;
  std::string error;  // set when !ok: "<file>:<line>: <what is wrong>"
  Graph graph;
};

// Loads `directory` (must contain edges.tsv; labels.tsv and features.tsv are
// optional). Duplicate edges and self loops are errors, as the layout
// promises there are none; the node count is max id + 1 over all files.
LoadResult LoadGraph(const std::filesystem::path& directory);

// Every undirected edge once, as (u, v) with u < v, in order of u then v.
std::vector<std::pair<uint32_t, uint32_t>> UndirectedEdges(const Graph& g);

// The adjacency as one sorted neighbour list per node (the form the
// in-process device simulations take).
std::vector<std::vector<uint32_t>> NeighbourLists(const Graph& g);

// A deterministic planted-partition graph (for demos without the shared
// datasets): `communities` blocks of `block_size` nodes, edge probability
// p_in inside a block and p_out across; label = block index.
Graph GeneratePlantedPartition(uint32_t communities, uint32_t block_size, double p_in,
                               double p_out, uint64_t seed);

}  // namespace nodefl::dataset
