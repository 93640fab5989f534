// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/secagg/job_format.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::secagg {
namespace {

// splitmix64's finaliser: a fixed public mixing, the same on every target.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void EncodeSecureAggregateParameters(const SecureAggregateParameters& p,
                                     uint8_t (&out)[kSecureAggregateParametersBytes]) {
  for (size_t i = 0; i < kAggregateSaltBytes; ++i) out[i] = p.salt[i];
  StoreU64Le(p.input_seed, out + kAggregateSaltBytes);
}

Result<SecureAggregateParameters> DecodeSecureAggregateParameters(ConstByteSpan bytes) {
  if (bytes.size() != kSecureAggregateParametersBytes) return Status::InvalidArgument();
  SecureAggregateParameters p;
  for (size_t i = 0; i < kAggregateSaltBytes; ++i) p.salt[i] = bytes[i];
  p.input_seed = LoadU64Le(bytes.data() + kAggregateSaltBytes);
  return p;
}

uint32_t SyntheticInput(uint64_t seed, uint32_t aggregation, uint32_t device, uint32_t i) {
  const uint64_t h = Mix(Mix(seed ^ (uint64_t{aggregation} << 32 | device)) + i);
  return static_cast<uint32_t>(h >> 32);
}

}  // namespace nodefl::secagg
