// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/tls/config.h"

#include <mbedtls/ecp.h>
#include <mbedtls/md.h>
#include <mbedtls/ssl_ciphersuites.h>

#include "nodefl/tls/errors.h"

namespace nodefl::tls {
namespace {

// MbedTLS keeps pointers to these lists, so they live for the whole program.
// Both suites give forward secrecy (ephemeral ECDH) and authenticated
// encryption; AES-128 first because it is faster on boards without AES
// instructions and its security margin is ample.
const int kCiphersuites[] = {
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    0,
};

const mbedtls_ecp_group_id kCurves[] = {MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_NONE};

const int kSignatureHashes[] = {MBEDTLS_MD_SHA256, MBEDTLS_MD_NONE};

}  // namespace

TlsConfig::TlsConfig() { mbedtls_ssl_config_init(&config_); }

TlsConfig::~TlsConfig() { mbedtls_ssl_config_free(&config_); }

Status TlsConfig::Init(TlsRole role, const TlsCredentials& credentials, crypto::RandomFunction random,
                       void* random_context) {
  if (ready_) return Status::FailedPrecondition();
  if (random == nullptr) return Status::InvalidArgument();
  if (!credentials.has_ca_chain() || !credentials.has_own_identity()) {
    return Status::FailedPrecondition();
  }
  const int endpoint =
      role == TlsRole::kServer ? MBEDTLS_SSL_IS_SERVER : MBEDTLS_SSL_IS_CLIENT;
  int rc = mbedtls_ssl_config_defaults(&config_, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return StatusFromMbedtls(rc);

  // Verification is never optional; see the header.
  mbedtls_ssl_conf_authmode(&config_, MBEDTLS_SSL_VERIFY_REQUIRED);
  mbedtls_ssl_conf_ca_chain(&config_, credentials.ca_chain(), nullptr);
  mbedtls_ssl_conf_cert_profile(&config_, &DeploymentCertificateProfile());
  rc = mbedtls_ssl_conf_own_cert(&config_, credentials.own_certificate(), credentials.own_key());
  if (rc != 0) return StatusFromMbedtls(rc);

  mbedtls_ssl_conf_min_version(&config_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&config_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_ciphersuites(&config_, kCiphersuites);
  mbedtls_ssl_conf_curves(&config_, kCurves);
  mbedtls_ssl_conf_sig_hashes(&config_, kSignatureHashes);
  mbedtls_ssl_conf_renegotiation(&config_, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
#if defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_SSL_CLI_C)
  // Resumption is the device session's job (resume token over a fresh
  // handshake); tickets would add server-side key management for nothing.
  mbedtls_ssl_conf_session_tickets(&config_, MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
#endif
  mbedtls_ssl_conf_rng(&config_, random, random_context);

  role_ = role;
  ready_ = true;
  return Status::Ok();
}

}  // namespace nodefl::tls
