// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Direction keys two test devices derive the same way, for the trimming
// role's tests (in a real job they come from the secure-compare job's key
// exchange, which these tests do not run).
#pragma once

#include <cstdint>

#include "nodefl/seal/pair_keys.h"

namespace nodefl::lumos::testing {

inline seal::PairKeys KeysFor(uint32_t a, uint32_t b) {
  const uint32_t low = a < b ? a : b, high = a < b ? b : a;
  uint8_t okm[2 * seal::kSealKeyBytes];
  for (size_t i = 0; i < sizeof(okm); ++i) okm[i] = static_cast<uint8_t>(low * 131 + high * 17 + i * 7 + 1);
  seal::PairKeys k;
  k.Assign(low, high, okm);
  return k;
}

}  // namespace nodefl::lumos::testing
