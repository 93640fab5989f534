// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Incremental SHA-256 through MbedTLS under both API generations: 2.x names
// the int-returning calls *_ret (Debian bookworm ships 2.28), 3.x dropped
// the suffix. Used wherever the SDK hashes: chunk digests (sdk/protocol),
// pair-key confirmation (sdk/seal), OT key derivation (sdk/ot), comparison
// transcripts (sdk/compare), walk uploads (sdk/fedwalk).
#pragma once

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>

#include <cstddef>
#include <cstdint>

namespace nodefl::crypto::sha256 {

#if MBEDTLS_VERSION_MAJOR >= 3
inline int Starts(mbedtls_sha256_context* ctx) { return mbedtls_sha256_starts(ctx, 0); }
inline int Update(mbedtls_sha256_context* ctx, const uint8_t* data, size_t n) {
  return mbedtls_sha256_update(ctx, data, n);
}
inline int Finish(mbedtls_sha256_context* ctx, uint8_t* out) { return mbedtls_sha256_finish(ctx, out); }
#else
inline int Starts(mbedtls_sha256_context* ctx) { return mbedtls_sha256_starts_ret(ctx, 0); }
inline int Update(mbedtls_sha256_context* ctx, const uint8_t* data, size_t n) {
  return mbedtls_sha256_update_ret(ctx, data, n);
}
inline int Finish(mbedtls_sha256_context* ctx, uint8_t* out) { return mbedtls_sha256_finish_ret(ctx, out); }
#endif

}  // namespace nodefl::crypto::sha256
