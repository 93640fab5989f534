// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Issuing the certificates of a nodefl deployment (docs/security.md):
//   * the CA: self-signed, CA:true with path length 0 (it signs leaves
//     only), keyUsage keyCertSign + cRLSign;
//   * the server: CN=<name> and a subjectAltName dNSName <name>,
//     keyUsage digitalSignature, extendedKeyUsage serverAuth;
//   * a device: CN=device-<id>, keyUsage digitalSignature + keyAgreement
//     (TLS client authentication and end-to-end sealing),
//     extendedKeyUsage clientAuth.
// Every certificate: X.509 v3, P-256 key, ECDSA-SHA256 signature, a random
// 128-bit serial, basicConstraints CA:false for leaves. The extended key
// usages keep a device certificate from serving as a server certificate
// and the other way round.
//
// C++17 so that the SDK's unit tests (tests/support/test_pki.h), which are
// also cross-built, can share it with the nodefl-ca tool.
#pragma once

#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/host/pki/ec_key.h"
#include "nodefl/host/pki/pki_result.h"

namespace nodefl::pki {

// Seconds since the Unix epoch, UTC.
struct Validity {
  int64_t not_before = 0;
  int64_t not_after = 0;
};

// From an hour before `now` (tolerates clocks that lag a little) to `days`
// days after that.
Validity ValidityForDays(int64_t now, uint32_t days);

// The current time for Validity.
int64_t UnixNow();

enum class LeafKind : uint8_t { kServer, kDevice };

struct LeafRequest {
  LeafKind kind = LeafKind::kDevice;
  std::string common_name;  // "device-<id>" for devices; the host name for a server
  std::string dns_name;     // subjectAltName dNSName; servers only (empty: none)
  Validity validity;
};

// True if `name` can be used as a common name as is: printable ASCII
// without the characters that need escaping in MbedTLS's name syntax.
bool IsPlainName(const std::string& name);

// "device-<id>".
std::string DeviceCommonName(uint32_t device_id);

// A self-signed CA certificate (DER) for `key` named CN=<name>.
PkiResult CreateCaCertificate(const std::string& name, const Validity& validity,
                              const EcKey& key, const Random& random,
                              std::vector<uint8_t>* der_out);

// Signs leaf certificates with one CA. Keeps its own copy of the CA key
// set up for fast repeated signing, so it is not thread-safe: use one
// issuer per thread.
class CertificateIssuer {
 public:
  CertificateIssuer();
  ~CertificateIssuer();
  CertificateIssuer(const CertificateIssuer&) = delete;
  CertificateIssuer& operator=(const CertificateIssuer&) = delete;

  // `ca_certificate` is PEM or DER; `ca_key` must match its public key.
  PkiResult Init(const std::vector<uint8_t>& ca_certificate, const EcKey& ca_key);

  // Issues a leaf for `subject_key`. The validity is cut to end no later
  // than the CA's (*clamped set to true then, if given).
  PkiResult Issue(const LeafRequest& request, const EcKey& subject_key, const Random& random,
                  std::vector<uint8_t>* der_out, bool* clamped = nullptr);

  // The CA certificate, DER.
  const std::vector<uint8_t>& ca_der() const { return ca_der_; }

 private:
  mbedtls_x509_crt ca_;
  mbedtls_pk_context signing_key_;
  std::string issuer_name_;
  std::vector<uint8_t> ca_der_;
  int64_t ca_not_after_ = 0;
  bool ready_ = false;
};

// PEM text for a DER certificate.
std::string CertificatePem(const std::vector<uint8_t>& der);

}  // namespace nodefl::pki
