// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SkipGram's learning-rate schedule: linear decay from `alpha` when no token
// has been trained to `min_alpha` when all tokens of all epochs have been
// (gensim's schedule; word2vec.c decays towards alpha * 1e-4 instead).
#pragma once

#include <algorithm>
#include <cstdint>

namespace nodefl::server::fedwalk {

// `done` may exceed `total` slightly when threads report late; the rate then
// stays at min_alpha instead of overshooting. total == 0 gives alpha.
inline float LinearLearningRate(float alpha, float min_alpha, uint64_t done, uint64_t total) {
  if (total == 0) return alpha;
  const double progress = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  return static_cast<float>(alpha - (static_cast<double>(alpha) - min_alpha) * progress);
}

}  // namespace nodefl::server::fedwalk
