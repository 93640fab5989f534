// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "test_pki.h"

#include <cstdio>
#include <cstdlib>

#include "nodefl/crypto/rng.h"

namespace nodefl::testing {
namespace {

void Require(const pki::PkiResult& result, const char* what) {
  if (!result.ok()) {
    std::fprintf(stderr, "TestPki: %s: %s\n", what, result.message().c_str());
    std::abort();
  }
}

}  // namespace

TestPki::TestPki(uint64_t seed, const std::string& ca_name) {
  if (!drbg_.SeedDeterministic(seed, /*stream=*/0x7e57'c0de).ok()) {
    std::fprintf(stderr, "TestPki: cannot seed the DRBG\n");
    std::abort();
  }
  random_.function = &crypto::DrbgRandom;
  random_.context = &drbg_;
  pki::EcKey ca_key;
  Require(key_generator_.Generate(random_, &ca_key), "CA key");
  pki::Validity validity = DefaultValidity();
  validity.not_after += 86400;  // outlives every default leaf
  Require(pki::CreateCaCertificate(ca_name, validity, ca_key, random_, &ca_der_), "CA certificate");
  Require(issuer_.Init(ca_der_, ca_key), "issuer");
  ca_pem_ = pki::CertificatePem(ca_der_);
}

pki::Validity TestPki::DefaultValidity() { return pki::ValidityForDays(pki::UnixNow(), 365); }

TestIdentity TestPki::Leaf(pki::LeafKind kind, const std::string& common_name,
                           const std::string& dns_name, const pki::Validity& validity) {
  pki::EcKey key;
  Require(key_generator_.Generate(random_, &key), "leaf key");
  pki::LeafRequest request;
  request.kind = kind;
  request.common_name = common_name;
  request.dns_name = dns_name;
  request.validity = validity;
  TestIdentity identity;
  Require(issuer_.Issue(request, key, random_, &identity.certificate_der), "leaf certificate");
  identity.private_key_der = key.PrivateKeyDer();
  identity.private_key_pem = key.PrivateKeyPem();
  identity.certificate_pem = pki::CertificatePem(identity.certificate_der);
  if (identity.private_key_der.empty() || identity.private_key_pem.empty() ||
      identity.certificate_pem.empty()) {
    std::fprintf(stderr, "TestPki: cannot encode a leaf\n");
    std::abort();
  }
  return identity;
}

TestIdentity TestPki::Server(const std::string& dns_name) {
  return Leaf(pki::LeafKind::kServer, dns_name, dns_name, DefaultValidity());
}

TestIdentity TestPki::Device(uint32_t device_id) {
  return Leaf(pki::LeafKind::kDevice, pki::DeviceCommonName(device_id), "", DefaultValidity());
}

Status TestPki::LoadTrust(tls::TlsCredentials* out) const { return out->LoadCaChain(ca_der_); }

Status TestPki::Load(const TestIdentity& identity, tls::TlsCredentials* out) const {
  NODEFL_TRY(out->LoadCaChain(ca_der_));
  return out->LoadOwnIdentity(identity.certificate_der, identity.private_key_der);
}

crypto::RandomFunction TestPki::random_function() const { return &crypto::DrbgRandom; }

}  // namespace nodefl::testing
