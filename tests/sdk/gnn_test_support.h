// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the GNN and Lumos training tests share: seeded normal values, and a
// random function that replays one byte stream (the same dropout mask in
// every evaluation of a finite-difference check).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace nodefl::testing {

inline std::vector<double> RandomValues(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// Replays one byte stream from its start at every Reset.
struct ReplayRandom {
  uint64_t state = 0;
  uint64_t seed = 0;
  void Reset() { state = seed; }
  static int Fill(void* ctx, unsigned char* out, size_t n) {
    auto* self = static_cast<ReplayRandom*>(ctx);
    for (size_t i = 0; i < n; ++i) {
      self->state = self->state * 6364136223846793005ULL + 1442695040888963407ULL;
      out[i] = static_cast<unsigned char>(self->state >> 56);
    }
    return 0;
  }
};

}  // namespace nodefl::testing
