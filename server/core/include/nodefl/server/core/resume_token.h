// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Resume tokens: 32 random bytes the server hands a device in Welcome so a
// reconnecting device can prove it continues the same session (and so gets
// its un-acknowledged relay messages back). The device's TLS certificate
// already proves *who* it is; the token proves *which session*.
//
// TokenGenerator draws them from MbedTLS CTR_DRBG seeded from the system
// entropy source, behind a mutex so any thread may call Generate().
// TokensEqual compares in constant time (mbedtls_ct_memcmp over all 32
// bytes, the length check folded in), so response timing reveals nothing
// about how much of a guessed token was right.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

namespace nodefl::server {

inline constexpr size_t kResumeTokenBytes = 32;
using ResumeToken = std::array<uint8_t, kResumeTokenBytes>;

// True iff `presented` is exactly the 32 bytes of `expected`. Runs in time
// independent of the contents (and of where they first differ).
bool TokensEqual(const ResumeToken& expected, std::span<const uint8_t> presented);

// How many times TokensEqual has run in this process. Lets tests check that
// a code path really compares tokens through it; also a cheap metric.
uint64_t TokenComparisonCount();

class TokenGenerator {
 public:
  // Seeds CTR_DRBG from the platform entropy source. `personalization`
  // separates instances (e.g. "nodefl-server resume tokens").
  // Returns nullptr with `*error` set if seeding fails.
  static std::unique_ptr<TokenGenerator> Create(std::string_view personalization,
                                                std::string* error);
  ~TokenGenerator();
  TokenGenerator(const TokenGenerator&) = delete;
  TokenGenerator& operator=(const TokenGenerator&) = delete;

  // Fills `token`; false if the DRBG failed (then `token` must not be used).
  bool Generate(ResumeToken* token);

 private:
  struct State;
  explicit TokenGenerator(std::unique_ptr<State> state);

  std::mutex mutex_;  // CTR_DRBG contexts are not safe for concurrent use
  std::unique_ptr<State> state_;
};

}  // namespace nodefl::server
