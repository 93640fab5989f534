// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Randomness for MbedTLS calls, in MbedTLS's own callback style
// (f_rng, p_rng). Devices pass DrbgRandom with their nodefl::Drbg; the
// server, which shares one TLS configuration across threads, passes
// mbedtls_ctr_drbg_random with a mbedtls_ctr_drbg_context (MbedTLS guards
// that context with a mutex because Debian builds it with
// MBEDTLS_THREADING_PTHREAD). A nodefl::Drbg has no lock and must not be
// shared between threads.
//
// Give TLS and sealing their own Drbg (e.g. a separate stream), not the one
// that draws privacy noise: handshakes consume a varying amount of
// randomness, which would otherwise shift a deterministic experiment's noise
// stream with network timing.
#pragma once

#include <cstddef>

namespace nodefl::crypto {

using RandomFunction = int (*)(void* context, unsigned char* out, size_t length);

// `context` is a seeded nodefl::Drbg*. Returns 0, or an MbedTLS error code
// if the DRBG has failed (it stays failed; see Drbg::status()).
int DrbgRandom(void* context, unsigned char* out, size_t length);

}  // namespace nodefl::crypto
