// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// P-256 key pairs for the deployment PKI: generation, parsing and encoding.
#pragma once

#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/host/pki/pki_result.h"

namespace nodefl::pki {

// A random source in MbedTLS's callback style.
struct Random {
  int (*function)(void* context, unsigned char* out, size_t length) = nullptr;
  void* context = nullptr;
};

// True if `data` starts (after whitespace) like a PEM block.
bool LooksLikePem(const uint8_t* data, size_t size);

// An owned MbedTLS key (move-only).
class EcKey {
 public:
  EcKey();
  ~EcKey();
  EcKey(EcKey&&) noexcept;
  EcKey& operator=(EcKey&&) noexcept;
  EcKey(const EcKey&) = delete;
  EcKey& operator=(const EcKey&) = delete;

  // Parses a PEM (NUL terminator optional) or DER private key; it must be
  // a P-256 key.
  PkiResult Parse(const uint8_t* data, size_t size);

  bool empty() const;
  // SEC1 ECPrivateKey encodings (the form MbedTLS and OpenSSL read).
  std::vector<uint8_t> PrivateKeyDer() const;
  std::string PrivateKeyPem() const;

  mbedtls_pk_context* get() const { return pk_.get(); }

 private:
  struct Free {
    void operator()(mbedtls_pk_context* pk) const;
  };
  std::unique_ptr<mbedtls_pk_context, Free> pk_;
};

// Generates P-256 keys quickly in bulk: it keeps one curve group whose
// precomputed multiples of the base point are reused for every key (about
// 2.5x faster than a fresh group per key). Not thread-safe: one per thread.
class KeyGenerator {
 public:
  KeyGenerator();
  ~KeyGenerator();
  KeyGenerator(const KeyGenerator&) = delete;
  KeyGenerator& operator=(const KeyGenerator&) = delete;

  PkiResult Generate(const Random& random, EcKey* out);

 private:
  mbedtls_ecp_group group_;
};

}  // namespace nodefl::pki
