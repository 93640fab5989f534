// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/resume_token.h"

// MbedTLS 2.28's constant_time.h lacks the extern "C" guard its other headers have.
extern "C" {
#include <mbedtls/constant_time.h>
}
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

#include <atomic>

namespace nodefl::server {
namespace {

std::atomic<uint64_t> g_token_comparisons{0};

}  // namespace

bool TokensEqual(const ResumeToken& expected, std::span<const uint8_t> presented) {
  g_token_comparisons.fetch_add(1, std::memory_order_relaxed);
  // Always compare 32 bytes so a short token costs the same as a long one;
  // a wrong length only changes the result, not the work done.
  ResumeToken candidate{};
  const size_t copy = presented.size() < candidate.size() ? presented.size() : candidate.size();
  for (size_t i = 0; i < copy; ++i) candidate[i] = presented[i];
  const int differs = mbedtls_ct_memcmp(expected.data(), candidate.data(), expected.size());
  const bool length_ok = presented.size() == kResumeTokenBytes;
  return (differs == 0) & length_ok;
}

uint64_t TokenComparisonCount() { return g_token_comparisons.load(std::memory_order_relaxed); }

struct TokenGenerator::State {
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  State() {
    mbedtls_entropy_init(&entropy);
    mbedtls_ctr_drbg_init(&drbg);
  }
  ~State() {
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&entropy);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

std::unique_ptr<TokenGenerator> TokenGenerator::Create(std::string_view personalization,
                                                       std::string* error) {
  auto state = std::make_unique<State>();
  const int rc = mbedtls_ctr_drbg_seed(&state->drbg, mbedtls_entropy_func, &state->entropy,
                                       reinterpret_cast<const unsigned char*>(personalization.data()),
                                       personalization.size());
  if (rc != 0) {
    if (error != nullptr) *error = "CTR_DRBG seeding failed (mbedtls error " + std::to_string(rc) + ")";
    return nullptr;
  }
  // Prediction resistance is unnecessary for session tokens; the periodic
  // reseed CTR_DRBG does on its own is enough.
  return std::unique_ptr<TokenGenerator>(new TokenGenerator(std::move(state)));
}

TokenGenerator::TokenGenerator(std::unique_ptr<State> state) : state_(std::move(state)) {}

TokenGenerator::~TokenGenerator() = default;

bool TokenGenerator::Generate(ResumeToken* token) {
  std::lock_guard<std::mutex> lock(mutex_);
  return mbedtls_ctr_drbg_random(&state_->drbg, token->data(), token->size()) == 0;
}

}  // namespace nodefl::server
