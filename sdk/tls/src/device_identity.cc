// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/tls/device_identity.h"

#include <mbedtls/oid.h>
#include <mbedtls/x509_crt.h>

#include <cstring>

namespace nodefl::tls {
namespace {

constexpr size_t kPrefixLength = sizeof(kDeviceCommonNamePrefix) - 1;

bool IsCommonName(const mbedtls_x509_buf& oid) {
  constexpr size_t kCnOidLength = sizeof(MBEDTLS_OID_AT_CN) - 1;
  return oid.len == kCnOidLength && std::memcmp(oid.p, MBEDTLS_OID_AT_CN, kCnOidLength) == 0;
}

}  // namespace

Result<uint32_t> DeviceIdFromCommonName(Span<const char> name) {
  if (name.size() <= kPrefixLength || name.size() > kMaxDeviceCommonNameBytes - 1 ||
      std::memcmp(name.data(), kDeviceCommonNamePrefix, kPrefixLength) != 0) {
    return Status::Unauthenticated();
  }
  const Span<const char> digits = name.subspan(kPrefixLength);
  // Canonical form only, so that "device-7" and "device-007" cannot both
  // name device 7.
  if (digits.size() > 1 && digits[0] == '0') return Status::Unauthenticated();
  uint64_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return Status::Unauthenticated();
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > UINT32_MAX) return Status::Unauthenticated();
  return static_cast<uint32_t>(value);
}

Result<uint32_t> DeviceIdFromCertificate(const mbedtls_x509_crt& certificate) {
  const mbedtls_x509_name* common_name = nullptr;
  for (const mbedtls_x509_name* name = &certificate.subject; name != nullptr; name = name->next) {
    if (name->oid.p == nullptr || !IsCommonName(name->oid)) continue;
    // Two common names would make the identity ambiguous.
    if (common_name != nullptr) return Status::Unauthenticated();
    common_name = name;
  }
  if (common_name == nullptr) return Status::Unauthenticated();
  return DeviceIdFromCommonName(Span<const char>(
      reinterpret_cast<const char*>(common_name->val.p), common_name->val.len));
}

Result<size_t> FormatDeviceCommonName(uint32_t device_id, Span<char> out) {
  char digits[10];
  size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + device_id % 10);
    device_id /= 10;
  } while (device_id != 0);
  const size_t length = kPrefixLength + count;
  if (out.size() < length + 1) return Status::ResourceExhausted();
  std::memcpy(out.data(), kDeviceCommonNamePrefix, kPrefixLength);
  for (size_t i = 0; i < count; ++i) out[kPrefixLength + i] = digits[count - 1 - i];
  out[length] = '\0';
  return length;
}

}  // namespace nodefl::tls
