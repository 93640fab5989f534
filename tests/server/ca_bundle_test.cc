// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The device bundle format: round trip, and refusal (never a crash) of
// anything malformed.
#include <gtest/gtest.h>

#include <vector>

#include "nodefl/host/pki/device_bundle.h"

namespace nodefl::pki {
namespace {

DeviceBundle SampleBundle() {
  DeviceBundle bundle;
  bundle.ca_der = {0x30, 0x03, 0x01, 0x02, 0x03};
  for (uint32_t id : {7u, 8u, 4294967295u}) {
    DeviceRecord record;
    record.device_id = id;
    record.certificate_der.assign(300 + id % 7, static_cast<uint8_t>(id));
    record.private_key_der.assign(121, static_cast<uint8_t>(id + 1));
    bundle.devices.push_back(record);
  }
  return bundle;
}

TEST(DeviceBundleTest, RoundTrips) {
  const DeviceBundle bundle = SampleBundle();
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(SerializeDeviceBundle(bundle, &bytes).ok());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8),
            std::vector<uint8_t>({'N', 'F', 'L', 'D', 'E', 'V', 'B', '1'}));
  DeviceBundle parsed;
  const PkiResult result = ParseDeviceBundle(bytes.data(), bytes.size(), &parsed);
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_EQ(parsed.ca_der, bundle.ca_der);
  ASSERT_EQ(parsed.devices.size(), bundle.devices.size());
  for (size_t i = 0; i < bundle.devices.size(); ++i) {
    EXPECT_EQ(parsed.devices[i].device_id, bundle.devices[i].device_id);
    EXPECT_EQ(parsed.devices[i].certificate_der, bundle.devices[i].certificate_der);
    EXPECT_EQ(parsed.devices[i].private_key_der, bundle.devices[i].private_key_der);
  }
}

TEST(DeviceBundleTest, RejectsEveryTruncationAndTrailingBytes) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(SerializeDeviceBundle(SampleBundle(), &bytes).ok());
  for (size_t length = 0; length < bytes.size(); ++length) {
    DeviceBundle parsed;
    EXPECT_FALSE(ParseDeviceBundle(bytes.data(), length, &parsed).ok()) << length;
    EXPECT_TRUE(parsed.devices.empty());
  }
  bytes.push_back(0);
  DeviceBundle parsed;
  const PkiResult result = ParseDeviceBundle(bytes.data(), bytes.size(), &parsed);
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.message().find("trailing"), std::string::npos);
}

TEST(DeviceBundleTest, RejectsBadHeadersAndLengths) {
  std::vector<uint8_t> good;
  ASSERT_TRUE(SerializeDeviceBundle(SampleBundle(), &good).ok());
  DeviceBundle parsed;
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  EXPECT_NE(ParseDeviceBundle(bad.data(), bad.size(), &parsed).message().find("magic"), std::string::npos);
  bad = good;
  bad[8] = 2;  // version
  EXPECT_NE(ParseDeviceBundle(bad.data(), bad.size(), &parsed).message().find("version"), std::string::npos);
  bad = good;
  bad[12] = 0xFF;  // count far beyond the data
  bad[13] = 0xFF;
  bad[14] = 0xFF;
  EXPECT_FALSE(ParseDeviceBundle(bad.data(), bad.size(), &parsed).ok());
  bad = good;
  bad[16] = bad[17] = bad[18] = bad[19] = 0;  // empty CA
  EXPECT_FALSE(ParseDeviceBundle(bad.data(), bad.size(), &parsed).ok());
  bad = good;
  const size_t first_record = 20 + 5;
  bad[first_record + 4] = 0;  // certificate length 0
  bad[first_record + 5] = 0;
  EXPECT_FALSE(ParseDeviceBundle(bad.data(), bad.size(), &parsed).ok());
  EXPECT_FALSE(ParseDeviceBundle(nullptr, 0, &parsed).ok());
  EXPECT_FALSE(ReadDeviceBundle("/nonexistent/devices.bundle", &parsed).ok());

  DeviceBundle too_big = SampleBundle();
  too_big.devices[0].certificate_der.resize(70000);
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(SerializeDeviceBundle(too_big, &bytes).ok());
}

}  // namespace
}  // namespace nodefl::pki
