// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/peer_certificates.h"

#include <mbedtls/x509_crt.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "nodefl/tls/device_identity.h"

namespace nodefl::server::net {
namespace {

constexpr std::string_view kPrefix = "device-";
constexpr std::string_view kSuffix = ".crt";

bool IdFromFileName(const std::string& name, uint32_t* id) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return false;
  }
  const std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 10 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const uint64_t value = std::stoull(digits);
  if (value > UINT32_MAX) return false;
  *id = static_cast<uint32_t>(value);
  return true;
}

}  // namespace

bool PeerCertificateStore::Load(const std::filesystem::path& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    *error = dir.string() + ": " + ec.message();
    return false;
  }
  for (const auto& entry : it) {
    uint32_t id = 0;
    if (!IdFromFileName(entry.path().filename().string(), &id)) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    pem.push_back(0);  // MbedTLS wants PEM NUL-terminated, length included
    mbedtls_x509_crt crt;
    mbedtls_x509_crt_init(&crt);
    const int rc = mbedtls_x509_crt_parse(&crt, pem.data(), pem.size());
    if (rc != 0) {
      mbedtls_x509_crt_free(&crt);
      *error = entry.path().string() + ": not a certificate (MbedTLS error " + std::to_string(rc) + ")";
      return false;
    }
    const auto named = tls::DeviceIdFromCertificate(crt);
    if (!named.ok() || *named != id) {
      mbedtls_x509_crt_free(&crt);
      *error = entry.path().string() + ": its subject does not name device " + std::to_string(id);
      return false;
    }
    std::vector<uint8_t> der(crt.raw.p, crt.raw.p + crt.raw.len);
    mbedtls_x509_crt_free(&crt);
    total_bytes_ += der.size();
    der_[id] = std::move(der);
  }
  if (der_.empty()) {
    *error = dir.string() + ": no device-<id>.crt files";
    return false;
  }
  return true;
}

std::span<const uint8_t> PeerCertificateStore::Find(uint32_t device_id) const {
  const auto it = der_.find(device_id);
  if (it == der_.end()) return {};
  return {it->second.data(), it->second.size()};
}

std::vector<uint32_t> PeerCertificateStore::Ids() const {
  std::vector<uint32_t> ids;
  ids.reserve(der_.size());
  for (const auto& [id, der] : der_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace nodefl::server::net
