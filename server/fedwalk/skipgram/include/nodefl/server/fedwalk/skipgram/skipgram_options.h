// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SkipGram with negative sampling (Mikolov et al. 2013) as the FedWalk
// server and the DeepWalk baseline train it. Defaults are the seed paper's
// (d = 128, window 10) with word2vec's/gensim's remaining defaults.
#pragma once

#include <cstdint>
#include <string>

namespace nodefl::server::fedwalk {

struct SkipGramOptions {
  uint32_t dim = 128;       // embedding size, 1 .. 4096
  uint32_t window = 10;     // most positions between centre and context, >= 1
  uint32_t negative = 5;    // negative samples per (centre, context) pair, >= 1
  // Passes over the corpus; 0 (the default) chooses them from the corpus:
  // enough passes for kAutoEpochTokensPerPair occurrences of each edge the
  // walks crossed (corpus_coverage.h, EpochsFor in skipgram_train.h).
  uint32_t epochs = 0;
  float alpha = 0.025f;     // learning rate at the start ...
  float min_alpha = 0.0001f;  // ... decaying linearly to this at the end, 0 <= min_alpha <= alpha
  // Input vectors start uniform in [-init_range / dim, init_range / dim):
  // 0.5 is word2vec.c's range, 1 gensim 4's.
  float init_range = 0.5f;
  unsigned threads = 2;     // training threads (0: hardware threads)
  uint64_t seed = 1;        // initial vectors and every random draw
  // Frequent-token subsampling threshold t of word2vec: a token of relative
  // frequency f is kept with probability (sqrt(f / t) + 1) * t / f
  // (capped at 1). 0 keeps every token.
  double sample = 0;
  // word2vec's reduced window: per centre, the window actually used is
  // drawn uniformly from 1 .. window (weighting near contexts more).
  bool dynamic_window = true;
};

// Empty if `options` are usable, else what is wrong with them.
std::string ValidateSkipGramOptions(const SkipGramOptions& options);

}  // namespace nodefl::server::fedwalk
