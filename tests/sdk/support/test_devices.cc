// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "test_devices.h"

#include <gtest/gtest.h>

namespace nodefl::testing {

DeviceCredentials::DeviceCredentials(TestPki& pki, uint32_t device_id)
    : id(device_id), identity(pki.Device(device_id)) {
  EXPECT_TRUE(pki.Load(identity, &credentials).ok());
  EXPECT_TRUE(drbg.SeedDeterministic(device_id).ok());
}

const TestIdentity& LastingIdentities::Of(uint32_t device_id) {
  auto it = identities_.find(device_id);
  if (it == identities_.end()) it = identities_.emplace(device_id, pki_.Device(device_id)).first;
  return it->second;
}

}  // namespace nodefl::testing
