// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Training SkipGram with negative sampling on a WalkCorpus.
//
// For every centre token c and every context token x within its window,
// the input vector of c is pushed towards the output vector of x and away
// from the output vectors of `negative` vertices drawn from the
// unigram^0.75 distribution (negative_sampler.h), by SGD on
//   -log sigma(in_c . out_x) - sum_k log sigma(-in_c . out_k)
// with the learning rate of learning_rate.h updated about every 10,000
// tokens. A negative that happens to equal x is skipped, as in word2vec.
//
// Threads (Hogwild!, Recht et al. 2011): thread t takes the t-th of
// `threads` contiguous walk ranges of about equal token counts, for every
// epoch, and updates the shared matrices without locks. Updates of two
// threads to one row may interleave and lose a little work; that is the
// standard trade of every word2vec implementation (formally a data race in
// the C++ memory model, harmless on the targets we build for; thread
// sanitizer will report it). With threads == 1 there is no race and
// training is deterministic for a given seed, binary and CPU family (the
// kernel picks an SSE2, AVX2 or AVX-512 build at load time, and those differ
// in the last bits of a float).
//
// Speed: no allocation, lock or virtual call in the loop; see
// skipgram_kernel.cc for the inner loop's measured design choices.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_options.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk {

// options.epochs if set, else AutoEpochs(MeasureCoverage(corpus)).
uint32_t EpochsFor(const WalkCorpus& corpus, const SkipGramOptions& options);

// Tokens are counted as read from the corpus (before subsampling), so
// total_tokens = EpochsFor(corpus, options) * corpus.num_tokens().
using SkipGramProgress = std::function<void(uint64_t done_tokens, uint64_t total_tokens)>;

// The untrained model: input vectors uniform in
// [-init_range/dim, init_range/dim) (from `options.seed`), output vectors
// zero, padding zero.
SkipGramModel InitializeModel(uint32_t num_vertices, const SkipGramOptions& options);

// Trains a model from InitializeModel(corpus.num_vertices(), options) for
// EpochsFor(corpus, options) passes (callers that report the passes call
// EpochsFor once and pass its result in options.epochs).
// std::nullopt and *error if the options are invalid or the corpus has no
// token. `progress`, if set, is called only from the calling thread (which
// waits while the workers train): about every 0.5 s, then once with
// done == total.
std::optional<SkipGramModel> Train(const WalkCorpus& corpus, const SkipGramOptions& options,
                                   const SkipGramProgress& progress = {}, std::string* error = nullptr);

// Mean negative-sampling loss of `model` over `pairs` (centre, context)
// pairs drawn uniformly: a uniform corpus token as centre, a uniform other
// position of its walk at most options.window away as context, and
// options.negative negatives from the corpus's unigram^0.75 distribution
// (skipping those equal to the context). Computed exactly in double (no
// sigmoid table). For an untrained model (output vectors zero) every term
// is log 2, so the loss is (1 + negative) log 2 up to skipped negatives.
// NaN if the corpus has no walk of two or more tokens or the model does
// not match it.
double EstimateLoss(const SkipGramModel& model, const WalkCorpus& corpus, const SkipGramOptions& options,
                    uint64_t pairs, uint64_t seed);

}  // namespace nodefl::server::fedwalk
