// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A cheap pseudo-random generator for SkipGram training and DeepWalk walk
// generation: SplitMix64 (Steele, Lea and Flood 2014), one add and two
// multiplies per 64-bit draw, passes BigCrush, and any seed is valid.
//
// NOT cryptographic and not meant to be: it shapes model training and the
// centralized baseline's walks, never anything a privacy guarantee rests on
// (the devices' DP noise and walk encoding use the SDK's nodefl_random).
#pragma once

#include <cstdint>

namespace nodefl::server::fedwalk {

// The SplitMix64 output function: a bijective 64-bit mixer.
constexpr uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Seed of stream `stream` under a user seed: distinct (seed, stream) pairs
// give unrelated generators, so per-thread and per-walk streams can be
// derived from one user seed without any coordination.
constexpr uint64_t StreamSeed(uint64_t seed, uint64_t stream) {
  return MixBits(MixBits(seed + 0x9E3779B97F4A7C15ull) ^ (stream * 0xD1B54A32D192ED03ull + 1));
}

class FastRng {
 public:
  explicit constexpr FastRng(uint64_t seed) : state_(seed) {}

  constexpr uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return MixBits(state_);
  }

  // Uniform in [0, n) for n >= 1 by multiply-shift on 32 random bits
  // (Lemire). Without the rejection step the bias is below n / 2^32, far
  // under anything training or a walk could notice.
  constexpr uint32_t Below(uint32_t n) {
    return static_cast<uint32_t>(((Next() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }

  // Uniform in [0, 1) with 53 random bits.
  constexpr double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace nodefl::server::fedwalk
