// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/peer_certificates.h"

#include <mbedtls/x509_crt.h>

#include <algorithm>
#include <string>
#include <fstream>
#include <iterator>

#include "nodefl/server/core/device_ids.h"
#include "nodefl/tls/device_identity.h"

namespace nodefl::server::net {
bool PeerCertificateStore::Load(const std::filesystem::path& dir, std::string* error) {
  // The same scan the registry's id list comes from, so both agree on which
  // files are device certificates.
  const CredentialIdsResult scan = ScanCredentialIds(dir);
  if (!scan.ok) {
    *error = scan.error;
    return false;
  }
  for (const uint32_t id : scan.ids) {
    const std::filesystem::path path = dir / ("device-" + std::to_string(id) + ".crt");
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    pem.push_back(0);  // MbedTLS wants PEM NUL-terminated, length included
    mbedtls_x509_crt crt;
    mbedtls_x509_crt_init(&crt);
    const int rc = mbedtls_x509_crt_parse(&crt, pem.data(), pem.size());
    if (rc != 0) {
      mbedtls_x509_crt_free(&crt);
      *error = path.string() + ": not a certificate (MbedTLS error " + std::to_string(rc) + ")";
      return false;
    }
    const auto named = tls::DeviceIdFromCertificate(crt);
    if (!named.ok() || *named != id) {
      mbedtls_x509_crt_free(&crt);
      *error = path.string() + ": its subject does not name device " + std::to_string(id);
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
