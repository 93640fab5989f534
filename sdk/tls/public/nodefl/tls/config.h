// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsConfig: the one TLS policy of a nodefl deployment, for a device
// (client) or the server. Nothing about it can be loosened:
//   * TLS 1.2 only (Debian's MbedTLS 2.28 has no TLS 1.3), no renegotiation,
//     no session tickets;
//   * ciphersuites ECDHE-ECDSA with AES-128-GCM or AES-256-GCM only, curve
//     P-256 only, SHA-256 signatures;
//   * mutual authentication always: authmode REQUIRED on both sides, the
//     pinned deployment CA as the only trust anchor. There is no API to
//     disable verification ("trust all" is never available); a client that
//     presents no certificate is refused by the server.
//
// The configuration points at the credentials (which must outlive it) and
// at the caller's random function. After Init it is read-only: the server
// shares one TlsConfig among all connections and threads, which is safe
// because MbedTLS only reads an ssl_config during handshakes and records,
// provided the random function is thread-safe (mbedtls_ctr_drbg_random with
// a mbedtls_ctr_drbg_context is; see nodefl/crypto/rng.h).
//
// Memory: mbedtls_ssl_config is held inline (a few hundred bytes); MbedTLS
// allocates a small node for the own-certificate list (heap inside MbedTLS,
// see credentials.h).
#pragma once

#include <mbedtls/ssl.h>

#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::tls {

enum class TlsRole : uint8_t {
  kClient,  // a device
  kServer,  // the nodefl server
};

class TlsConfig {
 public:
  TlsConfig();
  ~TlsConfig();
  TlsConfig(const TlsConfig&) = delete;
  TlsConfig& operator=(const TlsConfig&) = delete;

  // `credentials` must hold a CA chain and an own identity (both roles
  // authenticate) and outlive this object. `random`/`random_context` are
  // used for every handshake of every connection built from this config.
  // kFailedPrecondition if already initialised or the credentials are
  // incomplete, kInvalidArgument without a random function.
  Status Init(TlsRole role, const TlsCredentials& credentials, crypto::RandomFunction random,
              void* random_context);

  bool ready() const { return ready_; }
  TlsRole role() const { return role_; }

  // For TlsEndpoint.
  const mbedtls_ssl_config* get() const { return &config_; }

 private:
  mbedtls_ssl_config config_;
  TlsRole role_ = TlsRole::kClient;
  bool ready_ = false;
};

}  // namespace nodefl::tls
