// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The SkipGram inner loop (internal to nodefl_server_skipgram): one walk's worth of
// SGD updates, with everything it touches passed in so that it allocates
// nothing and calls nothing virtual.
#pragma once

#include <cstdint>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/negative_sampler.h"
#include "nodefl/server/fedwalk/skipgram/sigmoid_table.h"

namespace nodefl::server::fedwalk::internal {

struct SkipGramKernel {
  float* input = nullptr;   // rows of `stride` floats, stride % 16 == 0
  float* output = nullptr;  // the same shape; never overlaps `input`
  uint32_t stride = 0;
  uint32_t window = 1;
  uint32_t negative = 1;
  bool dynamic_window = true;
  const SigmoidTable* sigmoid = nullptr;
  const NegativeSampler* sampler = nullptr;
};

// One thread's working memory, allocated before training starts.
struct KernelScratch {
  float* gradient = nullptr;  // `stride` floats, not overlapping the matrices
  uint32_t* targets = nullptr;  // `negative` vertex ids
};

// Every (centre, context) pair of `walk` (already subsampled) at learning
// rate `alpha`.
void TrainWalk(const SkipGramKernel& kernel, const uint32_t* walk, uint32_t length, float alpha, FastRng& rng,
               const KernelScratch& scratch);

}  // namespace nodefl::server::fedwalk::internal
