// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/crypto/rng.h"

#include <mbedtls/ctr_drbg.h>

#include "nodefl/random/drbg.h"

namespace nodefl::crypto {

int DrbgRandom(void* context, unsigned char* out, size_t length) {
  if (context == nullptr) return MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
  auto* drbg = static_cast<Drbg*>(context);
  return drbg->Fill(Span<uint8_t>(out, length)).ok() ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
}

}  // namespace nodefl::crypto
