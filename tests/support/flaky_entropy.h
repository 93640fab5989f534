// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Drives a Drbg into failing in the middle of a mechanism's draws, to test
// that mechanisms never release a value from a failed generator.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "nodefl/platform/host_platform.h"
#include "nodefl/random/drbg.h"

namespace nodefl::testing {

// An entropy source that works until `fail` is set.
struct FlakyEntropy {
  bool fail = false;
};

inline Status FlakyFill(void* context, Span<uint8_t> out) {
  if (static_cast<FlakyEntropy*>(context)->fail) return Status::Unavailable();
  return host::HostEntropyFill(nullptr, out);
}

// Seeds `rng` from `flaky`, then cuts the entropy off and burns 10000
// one-byte requests: CTR_DRBG reseeds after 10000 requests, so the very next
// refill of the Drbg's buffer fails.
inline void ArmMidStreamFailure(Drbg& rng, FlakyEntropy& flaky, EntropySource& source) {
  source.fill = FlakyFill;
  source.context = &flaky;
  ASSERT_TRUE(rng.SeedFromEntropy(source, {}).ok());
  flaky.fail = true;
  uint8_t byte;
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(rng.Fill(Span<uint8_t>(&byte, 1)).ok());
  ASSERT_TRUE(rng.status().ok());
}

}  // namespace nodefl::testing
