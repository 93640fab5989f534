// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TestPki: a complete deployment PKI in memory for tests: a CA, a server
// certificate, device certificates, and deliberately wrong certificates
// (other CA, odd common names, expired) for negative tests. It uses the
// same issuing code as the nodefl-ca tool (server/host/pki), so what tests
// accept is what deployments get.
//
// Deterministic for a given seed (keys and serials come from a
// SeedDeterministic nodefl::Drbg); only the validity dates follow the clock.
// Cost: one P-256 key generation and one signature per certificate (about
// 0.6 ms natively, several ms under qemu). Not thread-safe.
//
// Issuing never fails with valid arguments; if it does, the process aborts
// with a message (it is a bug in the test set-up, not a test outcome).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/host/pki/cert_issuer.h"
#include "nodefl/host/pki/ec_key.h"
#include "nodefl/random/drbg.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::testing {

struct TestIdentity {
  std::vector<uint8_t> certificate_der;
  std::vector<uint8_t> private_key_der;
  std::string certificate_pem;
  std::string private_key_pem;
};

class TestPki {
 public:
  explicit TestPki(uint64_t seed = 1, const std::string& ca_name = "nodefl test CA");
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::vector<uint8_t>& ca_der() const { return ca_der_; }
  const std::string& ca_pem() const { return ca_pem_; }

  // Valid now and for a year.
  static pki::Validity DefaultValidity();

  // A server certificate for `dns_name` (CN and subjectAltName).
  TestIdentity Server(const std::string& dns_name = "localhost");
  // A device certificate, CN "device-<id>".
  TestIdentity Device(uint32_t device_id);
  // Any leaf: odd common names, other validity periods.
  TestIdentity Leaf(pki::LeafKind kind, const std::string& common_name,
                    const std::string& dns_name, const pki::Validity& validity);

  // Fills `out` with this CA as the trust anchor only.
  Status LoadTrust(tls::TlsCredentials* out) const;
  // Fills `out` with this CA and `identity`.
  Status Load(const TestIdentity& identity, tls::TlsCredentials* out) const;

  // A random source for TLS configs and seal calls in tests, from this
  // PKI's deterministic DRBG. Not thread-safe.
  crypto::RandomFunction random_function() const;
  void* random_context() { return &drbg_; }

 private:
  Drbg drbg_;
  pki::Random random_;
  pki::KeyGenerator key_generator_;
  pki::CertificateIssuer issuer_;
  std::vector<uint8_t> ca_der_;
  std::string ca_pem_;
};

}  // namespace nodefl::testing
