// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/tls/credentials.h"

#include <mbedtls/ecp.h>
#include <mbedtls/platform_util.h>

#include <cstring>

#include "nodefl/tls/errors.h"

namespace nodefl::tls {
namespace {

constexpr char kPemPrefix[] = "-----BEGIN";

bool LooksLikePem(ConstByteSpan in) {
  constexpr size_t kPrefixLength = sizeof(kPemPrefix) - 1;
  // Leading whitespace is allowed in PEM files.
  size_t start = 0;
  while (start < in.size() && (in[start] == ' ' || in[start] == '\n' || in[start] == '\r' ||
                               in[start] == '\t')) {
    ++start;
  }
  return in.size() - start >= kPrefixLength &&
         std::memcmp(in.data() + start, kPemPrefix, kPrefixLength) == 0;
}

// MbedTLS recognises PEM only when the buffer ends with a NUL that is
// counted in its length. Calls `parse(data, length)` with such a buffer for
// PEM input (copying to the stack if the NUL is missing) and with the bytes
// as they are for DER.
template <typename Parse>
int WithPemTerminated(ConstByteSpan in, Parse parse) {
  if (!LooksLikePem(in) || in.back() == '\0') return parse(in.data(), in.size());
  if (in.size() + 1 > kMaxPemCopyBytes) return MBEDTLS_ERR_X509_BUFFER_TOO_SMALL;
  unsigned char copy[kMaxPemCopyBytes];
  std::memcpy(copy, in.data(), in.size());
  copy[in.size()] = '\0';
  const int rc = parse(copy, in.size() + 1);
  // The copy may hold a private key.
  mbedtls_platform_zeroize(copy, in.size());
  return rc;
}

Status LoadStatus(int rc) {
  if (rc == MBEDTLS_ERR_X509_BUFFER_TOO_SMALL) return Status::ResourceExhausted();
  const Status status = StatusFromMbedtls(rc);
  // Whatever MbedTLS says about bad input, for the caller it is bad input.
  return status.code() == StatusCode::kResourceExhausted ? status : Status::InvalidArgument();
}

}  // namespace

const mbedtls_x509_crt_profile& DeploymentCertificateProfile() {
  static const mbedtls_x509_crt_profile kProfile = {
      MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA256) | MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA384),
      MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_ECKEY) | MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_ECDSA),
      MBEDTLS_X509_ID_FLAG(MBEDTLS_ECP_DP_SECP256R1),
      0,  // no RSA at all: the key types above exclude it
  };
  return kProfile;
}

bool IsP256Key(const mbedtls_pk_context& key) {
  if (!mbedtls_pk_can_do(&key, MBEDTLS_PK_ECKEY)) return false;
  const mbedtls_ecp_keypair* pair = mbedtls_pk_ec(key);
  return pair != nullptr && pair->grp.id == MBEDTLS_ECP_DP_SECP256R1;
}

TlsCredentials::TlsCredentials() {
  mbedtls_x509_crt_init(&parsed_ca_chain_);
  mbedtls_x509_crt_init(&own_certificate_);
  mbedtls_pk_init(&own_key_);
}

TlsCredentials::~TlsCredentials() {
  mbedtls_x509_crt_free(&parsed_ca_chain_);
  mbedtls_x509_crt_free(&own_certificate_);
  mbedtls_pk_free(&own_key_);  // zeroizes the private key
}

void TlsCredentials::ClearCaChain() {
  mbedtls_x509_crt_free(&parsed_ca_chain_);
  mbedtls_x509_crt_init(&parsed_ca_chain_);
  ca_chain_ = nullptr;
}

void TlsCredentials::ClearOwnIdentity() {
  mbedtls_x509_crt_free(&own_certificate_);
  mbedtls_x509_crt_init(&own_certificate_);
  mbedtls_pk_free(&own_key_);
  mbedtls_pk_init(&own_key_);
  has_own_identity_ = false;
}

Status TlsCredentials::LoadCaChain(ConstByteSpan pem_or_der) {
  ClearCaChain();
  if (pem_or_der.empty()) return Status::InvalidArgument();
  const int rc = WithPemTerminated(pem_or_der, [this](const unsigned char* data, size_t length) {
    return mbedtls_x509_crt_parse(&parsed_ca_chain_, data, length);
  });
  // mbedtls_x509_crt_parse returns a positive count of PEM blocks it could
  // not parse; a trust anchor must not be partially understood.
  if (rc != 0) {
    ClearCaChain();
    return rc > 0 ? Status::InvalidArgument() : LoadStatus(rc);
  }
  for (const mbedtls_x509_crt* crt = &parsed_ca_chain_; crt != nullptr; crt = crt->next) {
    if (crt->version != 3 || crt->ca_istrue == 0 || !IsP256Key(crt->pk)) {
      ClearCaChain();
      return Status::InvalidArgument();
    }
  }
  ca_chain_ = &parsed_ca_chain_;
  return Status::Ok();
}

Status TlsCredentials::ShareCaChain(const TlsCredentials& owner) {
  if (&owner == this || !owner.has_ca_chain()) return Status::InvalidArgument();
  ClearCaChain();
  ca_chain_ = owner.ca_chain();
  return Status::Ok();
}

Status TlsCredentials::LoadOwnIdentity(ConstByteSpan certificate, ConstByteSpan private_key) {
  ClearOwnIdentity();
  if (certificate.empty() || private_key.empty()) return Status::InvalidArgument();
  int rc = WithPemTerminated(certificate, [this](const unsigned char* data, size_t length) {
    return mbedtls_x509_crt_parse(&own_certificate_, data, length);
  });
  if (rc != 0) {
    ClearOwnIdentity();
    return rc > 0 ? Status::InvalidArgument() : LoadStatus(rc);
  }
  rc = WithPemTerminated(private_key, [this](const unsigned char* data, size_t length) {
    return mbedtls_pk_parse_key(&own_key_, data, length, nullptr, 0);
  });
  if (rc != 0) {
    ClearOwnIdentity();
    return LoadStatus(rc);
  }
  if (!IsP256Key(own_certificate_.pk) || !IsP256Key(own_key_) ||
      mbedtls_pk_check_pair(&own_certificate_.pk, &own_key_) != 0) {
    ClearOwnIdentity();
    return Status::InvalidArgument();
  }
  has_own_identity_ = true;
  return Status::Ok();
}

}  // namespace nodefl::tls
