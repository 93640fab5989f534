// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsCredentials: what a party of a nodefl deployment proves and trusts.
//   * the pinned deployment CA chain: the only certificates it trusts (there
//     is no system trust store and no way to switch verification off);
//   * its own certificate (chain) and P-256 private key.
// Devices and the server load them from bytes the app provides (PEM or
// DER); the SDK never reads files.
//
// Memory: the parsed certificates and key live on MbedTLS's heap. Debian's
// MbedTLS is built without MBEDTLS_PLATFORM_MEMORY, so X.509 and bignum code
// calls calloc/free internally (about 1-2 KiB per certificate, a few hundred
// bytes per key). nodefl's own code here never allocates. A port that must
// avoid the system heap builds MbedTLS with MBEDTLS_PLATFORM_MEMORY and
// MBEDTLS_MEMORY_BUFFER_ALLOC_C and serves these allocations from a static
// buffer (mbedtls_memory_buffer_alloc_init).
//
// Threads: loading is not thread-safe; once loaded, a TlsCredentials is only
// read (by TLS configurations and the seal module) and may be shared by
// several threads. This holds for MbedTLS 2.28 because its EC-key wrappers
// copy the curve group for every signature and verification instead of
// caching precomputed tables in the shared key.
#pragma once

#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include <cstddef>

#include "nodefl/config.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::tls {

// PEM input without a terminating NUL is copied to a stack buffer of this
// size to add one (MbedTLS's PEM parser needs it). Larger PEM input must
// include the NUL, or be passed as DER.
inline constexpr size_t kMaxPemCopyBytes = NODEFL_MAX_PEM_COPY_BYTES;

// The X.509 rules nodefl applies to every certificate it verifies (TLS and
// seal): ECDSA with SHA-256 or SHA-384 signatures, P-256 keys only.
const mbedtls_x509_crt_profile& DeploymentCertificateProfile();

class TlsCredentials {
 public:
  TlsCredentials();
  ~TlsCredentials();
  TlsCredentials(const TlsCredentials&) = delete;
  TlsCredentials& operator=(const TlsCredentials&) = delete;

  // Parses the deployment CA chain: one or more certificates, PEM (several
  // blocks allowed) or a single DER certificate. Every certificate must be a
  // CA certificate with a P-256 key. Replaces a previous chain; on failure
  // the object has no chain. kInvalidArgument for malformed input or a
  // certificate that is not a P-256 CA, kResourceExhausted for PEM without a
  // NUL longer than kMaxPemCopyBytes or if MbedTLS runs out of memory.
  Status LoadCaChain(ConstByteSpan pem_or_der);

  // Uses the chain parsed by `owner` instead of parsing a copy: many devices
  // in one process (the emulator) then hold the CA once. `owner` must have
  // a chain, must not reload it while shared, and must outlive this object
  // and every configuration built from it.
  Status ShareCaChain(const TlsCredentials& owner);

  // Parses this party's certificate (a leaf, optionally followed by
  // intermediates, PEM or DER) and its private key (PEM or DER, PKCS#8 or
  // SEC1, unencrypted). The key must be P-256 and match the leaf's public
  // key. Replaces a previous identity; on failure the object has none.
  Status LoadOwnIdentity(ConstByteSpan certificate, ConstByteSpan private_key);

  bool has_ca_chain() const { return ca_chain_ != nullptr; }
  bool has_own_identity() const { return has_own_identity_; }

  // For the TLS and seal modules. MbedTLS's APIs take non-const pointers
  // even where they only read, hence the mutable members.
  mbedtls_x509_crt* ca_chain() const { return ca_chain_; }
  mbedtls_x509_crt* own_certificate() const { return &own_certificate_; }
  mbedtls_pk_context* own_key() const { return &own_key_; }

 private:
  void ClearCaChain();
  void ClearOwnIdentity();

  mutable mbedtls_x509_crt parsed_ca_chain_;
  mutable mbedtls_x509_crt own_certificate_;
  mutable mbedtls_pk_context own_key_;
  mbedtls_x509_crt* ca_chain_ = nullptr;  // &parsed_ca_chain_ or a shared one
  bool has_own_identity_ = false;
};

// True if `key` is an elliptic-curve key on P-256 (NIST secp256r1).
bool IsP256Key(const mbedtls_pk_context& key);

}  // namespace nodefl::tls
