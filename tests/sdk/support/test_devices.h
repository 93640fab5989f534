// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the in-memory SDK tests' devices have in common: credentials issued
// by the test PKI. The rest of a test's device (session, role, buffers) is
// the role's own and stays in its test.
#pragma once

#include <cstdint>
#include <map>

#include "nodefl/random/drbg.h"
#include "nodefl/tls/credentials.h"
#include "test_pki.h"

namespace nodefl::testing {

// A device as the seal layer sees it: its identity from `pki`, the loaded
// credentials and a DRBG seeded deterministically from its id.
struct DeviceCredentials {
  DeviceCredentials(TestPki& pki, uint32_t device_id);

  uint32_t id;
  TestIdentity identity;
  tls::TlsCredentials credentials;
  Drbg drbg;
};

// One certificate and key per device id for as long as the object lives
// (a test program keeps it for good): a real device keeps its credentials
// across restarts and reruns.
class LastingIdentities {
 public:
  explicit LastingIdentities(uint64_t pki_seed) : pki_(pki_seed) {}
  LastingIdentities(const LastingIdentities&) = delete;
  LastingIdentities& operator=(const LastingIdentities&) = delete;

  TestPki& pki() { return pki_; }
  // Issued on first use.
  const TestIdentity& Of(uint32_t device_id);

 private:
  TestPki pki_;
  std::map<uint32_t, TestIdentity> identities_;
};

}  // namespace nodefl::testing
