// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SplitMix64 (Steele, Lea and Flood 2014): the randomness of kCAGC's
// seeding and of the simulation's column split. Not the SDK's Drbg: nothing
// here is secret (which points become seeds is public to the job), and a
// counter-based generator replays the same choices on every platform and in
// every language a participant might be written in.
#pragma once

#include <cstdint>

namespace nodefl::kcagc {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }

  // Uniform in [0, n) for n > 0 (rejection keeps it exactly uniform).
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = Next();
    while (x >= limit) x = Next();
    return x % n;
  }

 private:
  uint64_t state_;
};

// An independent stream per (seed, purpose): participant l's seeding, the
// server's, the column split. Mixing through one SplitMix64 step keeps
// nearby seeds and streams far apart.
inline uint64_t StreamSeed(uint64_t seed, uint64_t stream) {
  SplitMix64 mix(seed ^ (0xD1B54A32D192ED03ull * (stream + 1)));
  return mix.Next();
}

}  // namespace nodefl::kcagc
