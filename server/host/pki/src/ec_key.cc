// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/pki/ec_key.h"

#include <mbedtls/platform_util.h>

#include <cstring>

namespace nodefl::pki {

bool LooksLikePem(const uint8_t* data, size_t size) {
  static constexpr char kBegin[] = "-----BEGIN";
  size_t start = 0;
  while (start < size && (data[start] == ' ' || data[start] == '\t' || data[start] == '\r' ||
                          data[start] == '\n')) {
    ++start;
  }
  return size - start >= sizeof(kBegin) - 1 &&
         std::memcmp(data + start, kBegin, sizeof(kBegin) - 1) == 0;
}

void EcKey::Free::operator()(mbedtls_pk_context* pk) const {
  mbedtls_pk_free(pk);  // zeroizes the private key
  delete pk;
}

EcKey::EcKey() : pk_(new mbedtls_pk_context) { mbedtls_pk_init(pk_.get()); }
EcKey::~EcKey() = default;
EcKey::EcKey(EcKey&&) noexcept = default;
EcKey& EcKey::operator=(EcKey&&) noexcept = default;

bool EcKey::empty() const { return pk_ == nullptr || mbedtls_pk_get_type(pk_.get()) == MBEDTLS_PK_NONE; }

PkiResult EcKey::Parse(const uint8_t* data, size_t size) {
  if (pk_ == nullptr) pk_.reset(new mbedtls_pk_context);
  mbedtls_pk_free(pk_.get());
  mbedtls_pk_init(pk_.get());
  if (data == nullptr || size == 0) return PkiResult::Fail("empty private key");
  int rc = 0;
  if (LooksLikePem(data, size)) {
    // MbedTLS parses PEM only from a buffer whose NUL counts in its length.
    std::vector<uint8_t> copy(data, data + size);
    if (copy.back() != '\0') copy.push_back('\0');
    rc = mbedtls_pk_parse_key(pk_.get(), copy.data(), copy.size(), nullptr, 0);
    mbedtls_platform_zeroize(copy.data(), copy.size());
  } else {
    rc = mbedtls_pk_parse_key(pk_.get(), data, size, nullptr, 0);
  }
  if (rc != 0) return PkiResult::Fail("not a readable private key", rc);
  if (!mbedtls_pk_can_do(pk_.get(), MBEDTLS_PK_ECKEY) ||
      mbedtls_pk_ec(*pk_)->grp.id != MBEDTLS_ECP_DP_SECP256R1) {
    mbedtls_pk_free(pk_.get());
    mbedtls_pk_init(pk_.get());
    return PkiResult::Fail("the private key is not a P-256 key");
  }
  return PkiResult::Ok();
}

std::vector<uint8_t> EcKey::PrivateKeyDer() const {
  if (empty()) return {};
  uint8_t buffer[512];
  // pk_write functions write at the end of the buffer.
  const int length = mbedtls_pk_write_key_der(pk_.get(), buffer, sizeof(buffer));
  if (length <= 0) return {};
  std::vector<uint8_t> der(buffer + sizeof(buffer) - length, buffer + sizeof(buffer));
  mbedtls_platform_zeroize(buffer, sizeof(buffer));
  return der;
}

std::string EcKey::PrivateKeyPem() const {
  if (empty()) return {};
  unsigned char buffer[1024];
  if (mbedtls_pk_write_key_pem(pk_.get(), buffer, sizeof(buffer)) != 0) return {};
  std::string pem(reinterpret_cast<const char*>(buffer));
  mbedtls_platform_zeroize(buffer, sizeof(buffer));
  return pem;
}

KeyGenerator::KeyGenerator() {
  mbedtls_ecp_group_init(&group_);
  // Cannot fail for a built-in curve short of memory; Generate checks.
  if (mbedtls_ecp_group_load(&group_, MBEDTLS_ECP_DP_SECP256R1) != 0) {
    mbedtls_ecp_group_free(&group_);
    mbedtls_ecp_group_init(&group_);
  }
}

KeyGenerator::~KeyGenerator() { mbedtls_ecp_group_free(&group_); }

PkiResult KeyGenerator::Generate(const Random& random, EcKey* out) {
  if (random.function == nullptr || out == nullptr) return PkiResult::Fail("no random source");
  if (group_.id != MBEDTLS_ECP_DP_SECP256R1) return PkiResult::Fail("P-256 unavailable");
  EcKey key;
  int rc = mbedtls_pk_setup(key.get(), mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
  if (rc != 0) return PkiResult::Fail("key set-up failed", rc);
  mbedtls_ecp_keypair* pair = mbedtls_pk_ec(*key.get());
  rc = mbedtls_ecp_group_load(&pair->grp, MBEDTLS_ECP_DP_SECP256R1);
  // The shared group_ (with its cached table) does the scalar multiplication.
  if (rc == 0) {
    rc = mbedtls_ecp_gen_keypair(&group_, &pair->d, &pair->Q, random.function, random.context);
  }
  if (rc != 0) return PkiResult::Fail("key generation failed", rc);
  *out = std::move(key);
  return PkiResult::Ok();
}

}  // namespace nodefl::pki
