// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The device bundle: the credentials of many devices in one file, so that
// the emulator loads 10,000 devices with one read instead of 20,000 small
// files. Written by `nodefl-ca devices` as OUTDIR/devices.bundle (mode
// 0600: it holds private keys). Layout (all integers little-endian):
//
//   magic        8 bytes  "NFLDEVB1"
//   version      u32      1
//   count        u32      number of device records
//   ca_length    u32      length of the CA certificate
//   ca_der       ca_length bytes: the deployment CA certificate, DER
//   count records, each:
//     device_id    u32
//     cert_length  u16
//     key_length   u16
//     cert_der     cert_length bytes: the device certificate, DER
//     key_der      key_length bytes: its P-256 private key, SEC1 DER
//
// Nothing may follow the last record. Readers reject anything that does not
// match exactly (bad magic or version, lengths past the end, zero lengths,
// trailing bytes) with an error message, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/host/pki/pki_result.h"

namespace nodefl::pki {

inline constexpr char kDeviceBundleMagic[8] = {'N', 'F', 'L', 'D', 'E', 'V', 'B', '1'};
inline constexpr uint32_t kDeviceBundleVersion = 1;

struct DeviceRecord {
  uint32_t device_id = 0;
  std::vector<uint8_t> certificate_der;
  std::vector<uint8_t> private_key_der;
};

struct DeviceBundle {
  std::vector<uint8_t> ca_der;
  std::vector<DeviceRecord> devices;
};

// Encodes `bundle`; fails if a certificate or key exceeds 65535 bytes.
PkiResult SerializeDeviceBundle(const DeviceBundle& bundle, std::vector<uint8_t>* out);

// Decodes bytes written by SerializeDeviceBundle.
PkiResult ParseDeviceBundle(const uint8_t* data, size_t size, DeviceBundle* out);

// Reads and decodes a bundle file.
PkiResult ReadDeviceBundle(const std::string& path, DeviceBundle* out);

}  // namespace nodefl::pki
