// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/pki/device_bundle.h"

#include <cstdio>
#include <cstring>

namespace nodefl::pki {
namespace {

void PutU16(uint32_t value, std::vector<uint8_t>* out) {
  out->push_back(static_cast<uint8_t>(value));
  out->push_back(static_cast<uint8_t>(value >> 8));
}

void PutU32(uint32_t value, std::vector<uint8_t>* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// Bounds-checked little-endian reader over the input.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool U16(uint32_t* value) {
    if (size_ - pos_ < 2) return false;
    *value = static_cast<uint32_t>(data_[pos_]) | static_cast<uint32_t>(data_[pos_ + 1]) << 8;
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t* value) {
    if (size_ - pos_ < 4) return false;
    *value = 0;
    for (int i = 0; i < 4; ++i) *value |= static_cast<uint32_t>(data_[pos_ + i]) << (8 * i);
    pos_ += 4;
    return true;
  }
  bool Bytes(size_t count, std::vector<uint8_t>* out) {
    if (size_ - pos_ < count) return false;
    out->assign(data_ + pos_, data_ + pos_ + count);
    pos_ += count;
    return true;
  }
  bool Skip(size_t count) {
    if (size_ - pos_ < count) return false;
    pos_ += count;
    return true;
  }
  size_t position() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

PkiResult SerializeDeviceBundle(const DeviceBundle& bundle, std::vector<uint8_t>* out) {
  if (out == nullptr) return PkiResult::Fail("no output");
  if (bundle.ca_der.empty() || bundle.ca_der.size() > UINT32_MAX) {
    return PkiResult::Fail("bad CA certificate size");
  }
  if (bundle.devices.size() > UINT32_MAX) return PkiResult::Fail("too many devices");
  size_t total = sizeof(kDeviceBundleMagic) + 12 + bundle.ca_der.size();
  for (const DeviceRecord& device : bundle.devices) {
    total += 8 + device.certificate_der.size() + device.private_key_der.size();
  }
  std::vector<uint8_t> bytes;
  bytes.reserve(total);
  for (const char c : kDeviceBundleMagic) bytes.push_back(static_cast<uint8_t>(c));
  PutU32(kDeviceBundleVersion, &bytes);
  PutU32(static_cast<uint32_t>(bundle.devices.size()), &bytes);
  PutU32(static_cast<uint32_t>(bundle.ca_der.size()), &bytes);
  bytes.insert(bytes.end(), bundle.ca_der.begin(), bundle.ca_der.end());
  for (const DeviceRecord& device : bundle.devices) {
    if (device.certificate_der.empty() || device.certificate_der.size() > 0xFFFF ||
        device.private_key_der.empty() || device.private_key_der.size() > 0xFFFF) {
      return PkiResult::Fail("bad certificate or key size for device " +
                             std::to_string(device.device_id));
    }
    PutU32(device.device_id, &bytes);
    PutU16(static_cast<uint32_t>(device.certificate_der.size()), &bytes);
    PutU16(static_cast<uint32_t>(device.private_key_der.size()), &bytes);
    bytes.insert(bytes.end(), device.certificate_der.begin(), device.certificate_der.end());
    bytes.insert(bytes.end(), device.private_key_der.begin(), device.private_key_der.end());
  }
  *out = std::move(bytes);
  return PkiResult::Ok();
}

PkiResult ParseDeviceBundle(const uint8_t* data, size_t size, DeviceBundle* out) {
  if (out == nullptr) return PkiResult::Fail("no output");
  *out = DeviceBundle();
  if (data == nullptr && size != 0) return PkiResult::Fail("no input");
  Reader reader(data, size);
  if (size < sizeof(kDeviceBundleMagic) ||
      std::memcmp(data, kDeviceBundleMagic, sizeof(kDeviceBundleMagic)) != 0) {
    return PkiResult::Fail("not a nodefl device bundle (bad magic)");
  }
  (void)reader.Skip(sizeof(kDeviceBundleMagic));
  uint32_t version = 0;
  uint32_t count = 0;
  uint32_t ca_length = 0;
  if (!reader.U32(&version) || !reader.U32(&count) || !reader.U32(&ca_length)) {
    return PkiResult::Fail("truncated bundle header");
  }
  if (version != kDeviceBundleVersion) {
    return PkiResult::Fail("unsupported bundle version " + std::to_string(version));
  }
  if (ca_length == 0 || !reader.Bytes(ca_length, &out->ca_der)) {
    return PkiResult::Fail("bad CA certificate length");
  }
  // Each record takes at least 10 bytes; refuse a count the input cannot
  // hold before reserving memory for it.
  if (count > reader.remaining() / 10) return PkiResult::Fail("record count exceeds the data");
  out->devices.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    DeviceRecord record;
    uint32_t cert_length = 0;
    uint32_t key_length = 0;
    if (!reader.U32(&record.device_id) || !reader.U16(&cert_length) || !reader.U16(&key_length) ||
        cert_length == 0 || key_length == 0 || !reader.Bytes(cert_length, &record.certificate_der) ||
        !reader.Bytes(key_length, &record.private_key_der)) {
      *out = DeviceBundle();
      return PkiResult::Fail("record " + std::to_string(i) + " is truncated or empty");
    }
    out->devices.push_back(std::move(record));
  }
  if (reader.remaining() != 0) {
    *out = DeviceBundle();
    return PkiResult::Fail("trailing bytes after the last record");
  }
  return PkiResult::Ok();
}

PkiResult ReadDeviceBundle(const std::string& path, DeviceBundle* out) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return PkiResult::Fail("cannot open " + path);
  std::vector<uint8_t> data;
  uint8_t chunk[65536];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    data.insert(data.end(), chunk, chunk + got);
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return PkiResult::Fail("cannot read " + path);
  PkiResult result = ParseDeviceBundle(data.data(), data.size(), out);
  if (!result.ok()) return PkiResult::Fail(path + ": " + result.message());
  return result;
}

}  // namespace nodefl::pki
