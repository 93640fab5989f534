// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// How thoroughly one pass over a walk corpus covers the graph it was walked
// on, and the number of SkipGram epochs chosen from that.
//
// Why: a vertex's vector must fit one context per neighbour (and more per
// 2-hop vertex), so what one pass teaches depends on how often each edge
// occurs, not on how many tokens there are. Uniform walks with γ = 10,
// l = 40 give every vertex 400 tokens; on a graph of average degree 65 that
// is 12 occurrences per edge and one pass under-trains by several points
// F1, on a graph of average degree 4 it is 200 and one pass is plenty
// (docs/benchmarks.md, "SkipGram against gensim"). The measure is taken on
// the corpus alone (no graph), so it applies as well to the FedWalk
// server's walks, whose graph the server never sees.
#pragma once

#include <cstdint>

#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk {

struct CorpusCoverage {
  uint64_t tokens = 0;
  // Distinct unordered pairs {a, b}, a != b, of tokens adjacent in some walk
  // (the edges the walks crossed). Exact up to 16,384 pairs; above that an
  // estimate with a relative standard error of about 1%: pairs are kept
  // when the top L bits of a 64-bit hash are zero, L growing whenever more
  // than 16,384 are kept (distinct sampling), so the work is one hash per
  // token and the table stays in cache.
  uint64_t distinct_pairs = 0;
  // tokens / distinct_pairs: how often one pass shows each crossed edge
  // (0 if no walk has two different adjacent tokens).
  double tokens_per_pair = 0;
};

CorpusCoverage MeasureCoverage(const WalkCorpus& corpus);

// Auto epochs train on at least this many tokens per distinct pair.
inline constexpr double kAutoEpochTokensPerPair = 32;
// ... but never more passes than this.
inline constexpr uint32_t kAutoEpochsMax = 10;

// ceil(kAutoEpochTokensPerPair / tokens_per_pair), between 1 and
// kAutoEpochsMax (1 for a corpus without pairs).
uint32_t AutoEpochs(const CorpusCoverage& coverage);

}  // namespace nodefl::server::fedwalk
