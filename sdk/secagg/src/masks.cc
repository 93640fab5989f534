// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/masks.h"

#include <mbedtls/aes.h>
#include <mbedtls/platform_util.h>

#include "nodefl/core/little_endian.h"

namespace nodefl::secagg {
namespace {

constexpr size_t kWordsPerBlock = 4;  // an AES block is 16 bytes
constexpr size_t kChunkWords = 64;

// Walks the stream 64 words at a time and hands each chunk to `use`.
template <typename Use>
Status Stream(const MaskSeed& seed, uint64_t stream, size_t words, Use use) {
  mbedtls_aes_context aes;
  mbedtls_aes_init(&aes);
  Status status = Status::Ok();
  if (mbedtls_aes_setkey_enc(&aes, seed.bytes, 256) != 0) status = Status::Internal();
  uint8_t block[16], out[16];
  uint32_t chunk[kChunkWords];
  uint64_t index = 0;
  for (size_t done = 0; status.ok() && done < words;) {
    const size_t n = words - done < kChunkWords ? words - done : kChunkWords;
    for (size_t w = 0; w < n && status.ok(); w += kWordsPerBlock) {
      StoreU64Le(stream, block);
      StoreU64Le(index++, block + 8);
      if (mbedtls_aes_crypt_ecb(&aes, MBEDTLS_AES_ENCRYPT, block, out) != 0) {
        status = Status::Internal();
        break;
      }
      for (size_t k = 0; k < kWordsPerBlock && w + k < n; ++k) chunk[w + k] = LoadU32Le(out + 4 * k);
    }
    if (status.ok()) use(done, Span<const uint32_t>(chunk, n));
    done += n;
  }
  mbedtls_platform_zeroize(chunk, sizeof(chunk));
  mbedtls_platform_zeroize(out, sizeof(out));
  mbedtls_aes_free(&aes);
  return status;
}

}  // namespace

Status ExpandMask(const MaskSeed& seed, uint64_t stream, Span<uint32_t> out) {
  return Stream(seed, stream, out.size(), [&](size_t at, Span<const uint32_t> words) {
    for (size_t i = 0; i < words.size(); ++i) out[at + i] = words[i];
  });
}

Status ApplyMask(const MaskSeed& seed, uint64_t stream, MaskSign sign, Span<uint32_t> vector) {
  return Stream(seed, stream, vector.size(), [&](size_t at, Span<const uint32_t> words) {
    for (size_t i = 0; i < words.size(); ++i) {
      vector[at + i] = sign == MaskSign::kAdd ? vector[at + i] + words[i] : vector[at + i] - words[i];
    }
  });
}

}  // namespace nodefl::secagg
