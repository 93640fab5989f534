// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The device certificates the server hands out on PeerKeyRequest, loaded
// once from the credentials folder (device-<id>.crt, PEM). Certificates are
// public; devices verify every one against the pinned CA themselves, so the
// server is not trusted for their authenticity (docs/security.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace nodefl::server::net {

class PeerCertificateStore {
 public:
  // Loads every device-<id>.crt in `dir`. Each must parse and name its own
  // id in its subject CN; the first problem is reported in `*error`.
  bool Load(const std::filesystem::path& dir, std::string* error);

  // DER bytes, or an empty span when the device has no certificate.
  std::span<const uint8_t> Find(uint32_t device_id) const;
  std::vector<uint32_t> Ids() const;
  size_t size() const { return der_.size(); }
  size_t total_bytes() const { return total_bytes_; }

 private:
  std::unordered_map<uint32_t, std::vector<uint8_t>> der_;
  size_t total_bytes_ = 0;
};

}  // namespace nodefl::server::net
