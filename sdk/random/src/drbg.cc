// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/random/drbg.h"

#include <mbedtls/sha256.h>

#include <cstring>

namespace nodefl {
namespace {

int EntropyFromPlatform(void* context, unsigned char* out, size_t len) {
  const auto* source = static_cast<const EntropySource*>(context);
  return source->Fill(Span<uint8_t>(out, len)).ok() ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
}

void StoreLe64(uint64_t v, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Expands (seed, stream) into an endless byte stream: SHA-256 blocks of
// seed || stream || counter. Only used for reproducible runs; it replaces
// the entropy input of CTR_DRBG, so the output is fully determined by the seed.
int EntropyFromSeed(void* context, unsigned char* out, size_t len) {
  auto* state = static_cast<Drbg::DeterministicState*>(context);
  uint8_t block_input[24];
  uint8_t digest[32];
  size_t done = 0;
  while (done < len) {
    StoreLe64(state->seed, block_input);
    StoreLe64(state->stream, block_input + 8);
    StoreLe64(state->counter++, block_input + 16);
    if (mbedtls_sha256_ret(block_input, sizeof(block_input), digest, /*is224=*/0) != 0) {
      return MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
    }
    const size_t take = (len - done) < sizeof(digest) ? (len - done) : sizeof(digest);
    std::memcpy(out + done, digest, take);
    done += take;
  }
  return 0;
}

}  // namespace

Drbg::Drbg() { mbedtls_ctr_drbg_init(&ctx_); }

Drbg::~Drbg() { mbedtls_ctr_drbg_free(&ctx_); }

Status Drbg::SeedFromEntropy(const EntropySource& entropy, Span<const uint8_t> personalization) {
  mbedtls_ctr_drbg_free(&ctx_);
  mbedtls_ctr_drbg_init(&ctx_);
  seeded_ = false;
  buffer_pos_ = sizeof(buffer_);
  entropy_ = &entropy;
  if (entropy.fill == nullptr) {
    status_ = Status::FailedPrecondition();
    return status_;
  }
  const int rc = mbedtls_ctr_drbg_seed(&ctx_, &EntropyFromPlatform, const_cast<EntropySource*>(entropy_),
                                       personalization.data(), personalization.size());
  if (rc != 0) {
    status_ = Status::Unavailable();
    return status_;
  }
  deterministic_ = false;
  seeded_ = true;
  status_ = Status::Ok();
  return status_;
}

Status Drbg::SeedDeterministic(uint64_t seed, uint64_t stream) {
  mbedtls_ctr_drbg_free(&ctx_);
  mbedtls_ctr_drbg_init(&ctx_);
  seeded_ = false;
  buffer_pos_ = sizeof(buffer_);
  entropy_ = nullptr;
  det_ = DeterministicState{seed, stream, 0};
  static constexpr char kLabel[] = "nodefl deterministic drbg";
  const int rc = mbedtls_ctr_drbg_seed(&ctx_, &EntropyFromSeed, &det_,
                                       reinterpret_cast<const unsigned char*>(kLabel),
                                       sizeof(kLabel) - 1);
  if (rc != 0) {
    status_ = Status::Internal();
    return status_;
  }
  deterministic_ = true;
  seeded_ = true;
  status_ = Status::Ok();
  return status_;
}

Status Drbg::Fill(Span<uint8_t> out) {
  if (!status_.ok()) {
    std::memset(out.data(), 0, out.size());
    return status_;
  }
  size_t done = 0;
  while (done < out.size()) {
    const size_t chunk = (out.size() - done) < MBEDTLS_CTR_DRBG_MAX_REQUEST
                             ? (out.size() - done)
                             : MBEDTLS_CTR_DRBG_MAX_REQUEST;
    if (mbedtls_ctr_drbg_random(&ctx_, out.data() + done, chunk) != 0) {
      status_ = Status::Unavailable();
      std::memset(out.data(), 0, out.size());
      return status_;
    }
    done += chunk;
  }
  return Status::Ok();
}

void Drbg::Refill() {
  Fill(Span<uint8_t>(buffer_, sizeof(buffer_))).IgnoreError();  // sticky: see status()
  buffer_pos_ = 0;
}

uint64_t Drbg::NextU64() {
  if (buffer_pos_ + 8 > sizeof(buffer_)) Refill();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(buffer_[buffer_pos_ + i]) << (8 * i);
  buffer_pos_ += 8;
  return v;
}

uint32_t Drbg::NextU32() {
  if (buffer_pos_ + 4 > sizeof(buffer_)) Refill();
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(buffer_[buffer_pos_ + i]) << (8 * i);
  buffer_pos_ += 4;
  return v;
}

uint64_t Drbg::UniformBelow(uint64_t bound) {
  NODEFL_CHECK(bound >= 1);
  if (bound == 1) return 0;
  // Rejection on the top of the range: accept x < floor(2^64 / bound) * bound.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % bound + 1) % bound;
  for (;;) {
    const uint64_t x = NextU64();
    if (x <= limit) return x % bound;
    if (!status_.ok()) return 0;  // a failed DRBG only yields zeros; do not spin
  }
}

double Drbg::UniformDouble() {
  return static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
}

double Drbg::OpenUnitFromBits(uint64_t bits) {
  // (k + 0.5) / 2^52 for k = the top 52 bits. k + 0.5 < 2^52 needs 53
  // significant bits, which a double has, so the sum is exact and the
  // result lies in [2^-53, 1 - 2^-53]: never 0 or 1, symmetric about 1/2.
  // With 53 bits, k + 0.5 for k = 2^53 - 1 needs 54 bits and rounds (to
  // even) up to 2^53, i.e. exactly 1.0.
  return (static_cast<double>(bits >> 12) + 0.5) * 0x1.0p-52;
}

double Drbg::UniformOpenDouble() { return OpenUnitFromBits(NextU64()); }

bool Drbg::Bernoulli(double p) {
  if (!(p > 0.0)) return false;
  if (p >= 1.0) return true;
  return UniformDouble() < p;
}

bool Drbg::BernoulliRational(uint64_t numerator, uint64_t denominator) {
  NODEFL_CHECK(denominator >= 1);
  if (numerator >= denominator) return true;
  return UniformBelow(denominator) < numerator;
}

}  // namespace nodefl
