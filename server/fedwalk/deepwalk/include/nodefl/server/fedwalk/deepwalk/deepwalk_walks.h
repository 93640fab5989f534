// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeepWalk's random walks (Perozzi et al. 2014), the centralized baseline
// FedWalk is compared against (Sec. 5): in
// each of `walks_per_vertex` rounds every vertex starts one walk, in an
// order shuffled per round; a walk moves to a uniformly chosen neighbour
// until it holds `walk_length` vertices (the start counts). An isolated
// vertex gives a walk of just itself.
//
// Determinism: round r's order comes from the stream StreamSeed(seed', r)
// and the walk in slot i of round r from its own stream (fast_rng.h), and
// each walk is written to its fixed place in the corpus. The corpus is
// therefore a function of (graph, walks_per_vertex, walk_length, seed)
// alone: the same for any thread count, not only for a repeated one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk {

struct DeepWalkOptions {
  uint32_t walks_per_vertex = 80;  // gamma, >= 1
  uint32_t walk_length = 40;       // l, vertices per walk including the start, >= 1
  unsigned threads = 2;            // 0: hardware threads
  uint64_t seed = 1;
};

using WalkProgress = std::function<void(uint64_t done_walks, uint64_t total_walks)>;

// The gamma * n walks, round by round (walk r * n + i is round r's i-th).
// std::nullopt and *error for invalid options or a corpus too large to
// index. `progress`, if set, is called only from the calling thread: about
// every 0.5 s, then once with done == total.
std::optional<WalkCorpus> GenerateDeepWalks(const nodefl::dataset::Graph& graph, const DeepWalkOptions& options,
                                            const WalkProgress& progress = {}, std::string* error = nullptr);

}  // namespace nodefl::server::fedwalk
