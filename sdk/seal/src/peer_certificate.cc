// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/peer_certificate.h"

#include <mbedtls/ecp.h>
#include <mbedtls/x509_crt.h>

#include "nodefl/tls/device_identity.h"

namespace nodefl::seal {
namespace {

// Frees the parsed certificate on every return path.
class ParsedCertificate {
 public:
  ParsedCertificate() { mbedtls_x509_crt_init(&crt_); }
  ~ParsedCertificate() { mbedtls_x509_crt_free(&crt_); }
  ParsedCertificate(const ParsedCertificate&) = delete;
  ParsedCertificate& operator=(const ParsedCertificate&) = delete;
  mbedtls_x509_crt* get() { return &crt_; }

 private:
  mbedtls_x509_crt crt_;
};

}  // namespace

Status VerifyPeerCertificate(const tls::TlsCredentials& trust, ConstByteSpan certificate_der,
                             uint32_t expected_device_id, PeerPublicKey* out) {
  if (out == nullptr) return Status::InvalidArgument();
  if (!trust.has_ca_chain()) return Status::FailedPrecondition();
  if (certificate_der.empty()) return Status::InvalidArgument();

  ParsedCertificate parsed;
  mbedtls_x509_crt* crt = parsed.get();
  if (mbedtls_x509_crt_parse_der(crt, certificate_der.data(), certificate_der.size()) != 0 ||
      crt->raw.len != certificate_der.size()) {
    return Status::InvalidArgument();
  }

  uint32_t flags = 0;
  if (mbedtls_x509_crt_verify_with_profile(crt, trust.ca_chain(), nullptr,
                                           &tls::DeploymentCertificateProfile(), nullptr, &flags,
                                           nullptr, nullptr) != 0 ||
      flags != 0) {
    return Status::Unauthenticated();
  }
  // A CA certificate names no device, and the CA itself would otherwise be
  // a "peer" anyone could be redirected to.
  if (crt->ca_istrue != 0) return Status::Unauthenticated();
  const Result<uint32_t> id = tls::DeviceIdFromCertificate(*crt);
  if (!id.ok() || *id != expected_device_id) return Status::Unauthenticated();
  if (!tls::IsP256Key(crt->pk)) return Status::Unauthenticated();
  if (mbedtls_x509_crt_check_key_usage(crt, MBEDTLS_X509_KU_KEY_AGREEMENT) != 0) {
    return Status::Unauthenticated();
  }

  const mbedtls_ecp_keypair* key = mbedtls_pk_ec(crt->pk);
  PeerPublicKey result;
  size_t written = 0;
  if (mbedtls_ecp_point_write_binary(&key->grp, &key->Q, MBEDTLS_ECP_PF_UNCOMPRESSED, &written,
                                     result.point, sizeof(result.point)) != 0 ||
      written != sizeof(result.point)) {
    return Status::Internal();
  }
  result.device_id = expected_device_id;
  result.valid = true;
  *out = result;
  return Status::Ok();
}

}  // namespace nodefl::seal
