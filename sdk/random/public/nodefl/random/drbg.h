// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Drbg: the SDK's only source of randomness. It is MbedTLS's CTR_DRBG
// (AES-256, NIST SP 800-90A) seeded either
//   * from the platform's EntropySource (production: a CSPRNG), or
//   * deterministically from a 64-bit seed (tests and reproducible
//     experiments; NOT secure, and reported as such by deterministic()).
// Both modes run the same generator code, so tests exercise what ships.
//
// Error model: drawing numbers cannot fail at the call site (a sampler would
// drown in checks). If the DRBG ever fails (entropy gone at reseed), the
// object turns sticky-failed: every later draw returns zeros and status()
// reports the error. Every mechanism checks status() before it releases a
// value, so a failed DRBG never produces a silent release.
#pragma once

#include <mbedtls/ctr_drbg.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/platform/platform.h"

namespace nodefl {

class Drbg {
 public:
  Drbg();
  ~Drbg();
  Drbg(const Drbg&) = delete;
  Drbg& operator=(const Drbg&) = delete;

  // Production seeding. `personalization` (e.g. the device id) separates
  // instances that share an entropy source; it may be empty. `entropy` must
  // outlive the Drbg (CTR_DRBG reseeds from it periodically).
  Status SeedFromEntropy(const EntropySource& entropy, Span<const uint8_t> personalization);

  // Reproducible seeding: same seed and stream -> same numbers on every
  // platform. `stream` separates independent generators with one seed (e.g.
  // one per emulated device).
  Status SeedDeterministic(uint64_t seed, uint64_t stream = 0);

  bool seeded() const { return seeded_; }
  bool deterministic() const { return deterministic_; }
  Status status() const { return status_; }

  // Raw bytes. Fails (and turns sticky-failed) if the DRBG fails.
  Status Fill(Span<uint8_t> out);

  uint32_t NextU32();
  uint64_t NextU64();
  // Uniform on {0, ..., bound-1} without modulo bias; bound must be >= 1.
  uint64_t UniformBelow(uint64_t bound);
  // Uniform on [0, 1) with 53 random bits.
  double UniformDouble();
  // Uniform on the 2^52 midpoints (k + 1/2) 2^-52 of [0, 1): never 0 or 1,
  // so log() and log1p(-x) of it are finite. 52 bits, not 53: see
  // OpenUnitFromBits.
  double UniformOpenDouble();
  // The map UniformOpenDouble applies to one NextU64() draw (its top 52
  // bits); public so that tests can check the extreme draws exactly.
  static double OpenUnitFromBits(uint64_t bits);
  // True with probability p (p <= 0: never, p >= 1: always).
  bool Bernoulli(double p);
  // True with probability numerator/denominator, exactly (integer draws only).
  bool BernoulliRational(uint64_t numerator, uint64_t denominator);

  // Internal: the entropy adapters below need these.
  struct DeterministicState {
    uint64_t seed = 0;
    uint64_t stream = 0;
    uint64_t counter = 0;
  };

 private:
  void Refill();

  mbedtls_ctr_drbg_context ctx_;
  DeterministicState det_;
  const EntropySource* entropy_ = nullptr;
  // Draws are served from a buffer so that small requests do not each pay a
  // CTR_DRBG call (one AES block per 16 bytes plus a state update per call).
  uint8_t buffer_[512];
  size_t buffer_pos_ = sizeof(buffer_);
  bool seeded_ = false;
  bool deterministic_ = false;
  Status status_ = Status::FailedPrecondition();  // until seeded
};

}  // namespace nodefl
