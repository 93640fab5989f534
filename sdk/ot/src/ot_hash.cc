// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/ot/ot_hash.h"

#include <mbedtls/platform_util.h>

#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/sha256.h"

namespace nodefl::ot {

namespace {
constexpr uint8_t kPrefix[] = {'n', 'o', 'd', 'e', 'f', 'l', '-', 'o', 't'};
}

KeyHash::KeyHash(HashDomain domain, const OtTag& tag, uint64_t index) {
  mbedtls_sha256_init(&context_);
  failed_ = crypto::sha256::Starts(&context_) != 0;
  Add(ConstByteSpan(kPrefix, sizeof(kPrefix)));
  const uint8_t d = static_cast<uint8_t>(domain);
  Add(ConstByteSpan(&d, 1));
  Add(ConstByteSpan(tag.bytes, kOtTagBytes));
  uint8_t le[8];
  StoreU64Le(index, le);
  Add(ConstByteSpan(le, sizeof(le)));
}

KeyHash::~KeyHash() { mbedtls_sha256_free(&context_); }

void KeyHash::Add(ConstByteSpan part) {
  if (failed_ || part.size() == 0) return;
  failed_ = crypto::sha256::Update(&context_, part.data(), part.size()) != 0;
}

Status KeyHash::Finish(ByteSpan out) {
  if (out.size() > 32) return Status::InvalidArgument();
  uint8_t digest[32];
  if (failed_ || crypto::sha256::Finish(&context_, digest) != 0) {
    failed_ = true;
    return Status::Internal();
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = digest[i];
  mbedtls_platform_zeroize(digest, sizeof(digest));
  return Status::Ok();
}

}  // namespace nodefl::ot
