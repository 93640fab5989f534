// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/seal.h"

#include <mbedtls/gcm.h>
#include <mbedtls/platform_util.h>

#include <cstring>

namespace nodefl::seal {
namespace {

constexpr size_t kNonceBytes = 12;
constexpr size_t kAadBytes = 4 + 4 + 8 + 8;

void StoreBe32(uint32_t value, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (24 - 8 * i));
}

void StoreBe64(uint64_t value, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (56 - 8 * i));
}

uint64_t LoadBe64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | in[i];
  return value;
}

bool Overlap(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size) {
  return a_size > 0 && b_size > 0 && a < b + b_size && b < a + a_size;
}

// The key for messages from `src` to `dst` and its id, or nullptr if
// `keys` are not the keys of that pair.
const uint8_t* DirectionKey(const PairKeys& keys, uint32_t src, uint32_t dst, const uint8_t** key_id) {
  if (!keys.valid) return nullptr;
  if (src == keys.low_id && dst == keys.high_id) {
    *key_id = keys.low_to_high_id;
    return keys.low_to_high;
  }
  if (src == keys.high_id && dst == keys.low_id) {
    *key_id = keys.high_to_low_id;
    return keys.high_to_low;
  }
  return nullptr;
}

void MakeNonceAndAad(uint32_t src, uint32_t dst, uint64_t job_id, uint64_t counter,
                     uint8_t (&nonce)[kNonceBytes], uint8_t (&aad)[kAadBytes]) {
  // The counter alone makes the nonce unique under a direction key; the
  // four leading zero bytes are fixed.
  std::memset(nonce, 0, 4);
  StoreBe64(counter, nonce + 4);
  StoreBe32(src, aad);
  StoreBe32(dst, aad + 4);
  StoreBe64(job_id, aad + 8);
  StoreBe64(counter, aad + 16);
}

// Frees (and thereby zeroes) the GCM context on every return path.
class Gcm {
 public:
  Gcm() { mbedtls_gcm_init(&ctx_); }
  ~Gcm() { mbedtls_gcm_free(&ctx_); }
  Gcm(const Gcm&) = delete;
  Gcm& operator=(const Gcm&) = delete;
  int SetKey(const uint8_t* key) {
    return mbedtls_gcm_setkey(&ctx_, MBEDTLS_CIPHER_ID_AES, key, kSealKeyBytes * 8);
  }
  mbedtls_gcm_context* get() { return &ctx_; }

 private:
  mbedtls_gcm_context ctx_;
};

}  // namespace

Result<size_t> Seal(const PairKeys& keys, const SealHeader& header, ConstByteSpan plaintext,
                    ByteSpan out) {
  const uint8_t* key_id = nullptr;
  const uint8_t* key = DirectionKey(keys, header.src, header.dst, &key_id);
  if (key == nullptr || header.counter == 0) return Status::InvalidArgument();
  if (plaintext.size() > kMaxSealPlaintextBytes) return Status::OutOfRange();
  const size_t sealed_size = plaintext.size() + kSealOverheadBytes;
  if (out.size() < sealed_size) return Status::ResourceExhausted();
  if (Overlap(plaintext.data(), plaintext.size(), out.data(), sealed_size)) {
    return Status::InvalidArgument();
  }

  uint8_t nonce[kNonceBytes];
  uint8_t aad[kAadBytes];
  MakeNonceAndAad(header.src, header.dst, header.job_id, header.counter, nonce, aad);
  uint8_t* counter_field = out.data() + kSealKeyIdBytes;
  uint8_t* ciphertext = counter_field + kSealCounterBytes;
  uint8_t* tag = ciphertext + plaintext.size();
  std::memcpy(out.data(), key_id, kSealKeyIdBytes);
  StoreBe64(header.counter, counter_field);

  Gcm gcm;
  int rc = gcm.SetKey(key);
  if (rc == 0) {
    rc = mbedtls_gcm_crypt_and_tag(gcm.get(), MBEDTLS_GCM_ENCRYPT, plaintext.size(), nonce,
                                   sizeof(nonce), aad, sizeof(aad), plaintext.data(), ciphertext,
                                   kSealTagBytes, tag);
  }
  if (rc != 0) {
    mbedtls_platform_zeroize(out.data(), sealed_size);
    return Status::Internal();
  }
  return sealed_size;
}

Result<size_t> Open(const PairKeys& keys, uint32_t src, uint32_t dst, uint64_t job_id,
                    ConstByteSpan sealed, ByteSpan plaintext_out, uint64_t* counter_out) {
  if (counter_out == nullptr) return Status::InvalidArgument();
  const uint8_t* key_id = nullptr;
  const uint8_t* key = DirectionKey(keys, src, dst, &key_id);
  if (key == nullptr) return Status::InvalidArgument();
  if (sealed.size() < kSealOverheadBytes || sealed.size() > kMaxSealedBytes) {
    return Status::Unauthenticated();
  }
  const size_t plaintext_size = sealed.size() - kSealOverheadBytes;
  if (plaintext_out.size() < plaintext_size) return Status::ResourceExhausted();
  if (Overlap(sealed.data(), sealed.size(), plaintext_out.data(), plaintext_size)) {
    return Status::InvalidArgument();
  }
  const uint64_t counter = LoadBe64(sealed.data() + kSealKeyIdBytes);
  // A key id is public, so comparing it in variable time leaks nothing.
  if (counter == 0 || std::memcmp(sealed.data(), key_id, kSealKeyIdBytes) != 0) {
    mbedtls_platform_zeroize(plaintext_out.data(), plaintext_size);
    return Status::Unauthenticated();
  }

  uint8_t nonce[kNonceBytes];
  uint8_t aad[kAadBytes];
  MakeNonceAndAad(src, dst, job_id, counter, nonce, aad);
  const uint8_t* ciphertext = sealed.data() + kSealKeyIdBytes + kSealCounterBytes;
  const uint8_t* tag = ciphertext + plaintext_size;

  Gcm gcm;
  int rc = gcm.SetKey(key);
  if (rc == 0) {
    // Checks the tag in constant time; on mismatch MbedTLS zeroes the output.
    rc = mbedtls_gcm_auth_decrypt(gcm.get(), plaintext_size, nonce, sizeof(nonce), aad,
                                  sizeof(aad), tag, kSealTagBytes, ciphertext,
                                  plaintext_out.data());
  }
  if (rc != 0) {
    mbedtls_platform_zeroize(plaintext_out.data(), plaintext_size);
    return rc == MBEDTLS_ERR_GCM_AUTH_FAILED ? Status::Unauthenticated() : Status::Internal();
  }
  *counter_out = counter;
  return plaintext_size;
}

bool PeekSealed(ConstByteSpan sealed, uint8_t (&key_id)[kSealKeyIdBytes], uint64_t* counter) {
  if (counter == nullptr || sealed.size() < kSealKeyIdBytes + kSealCounterBytes) return false;
  std::memcpy(key_id, sealed.data(), kSealKeyIdBytes);
  *counter = LoadBe64(sealed.data() + kSealKeyIdBytes);
  return true;
}

}  // namespace nodefl::seal
