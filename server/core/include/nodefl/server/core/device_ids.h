// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Which device ids exist: the ids the deployment issued credentials for.
// DeviceIndex maps each id to a dense slot number 0..size()-1 so that the
// registry and the relay can keep per-device state in flat arrays (small
// per-device cost at 10,000 devices). It is immutable after construction,
// so every thread may use it without locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace nodefl::server {

class DeviceIndex {
 public:
  // Duplicates are removed; order does not matter.
  explicit DeviceIndex(std::vector<uint32_t> ids);

  size_t size() const { return ids_.size(); }
  // Slot of `id`, or nullopt if the id was never issued. O(1) when the ids
  // form one contiguous range (the usual case), O(log n) otherwise.
  std::optional<size_t> SlotOf(uint32_t id) const;
  uint32_t IdAt(size_t slot) const { return ids_[slot]; }
  const std::vector<uint32_t>& ids() const { return ids_; }

 private:
  std::vector<uint32_t> ids_;  // sorted, unique
  bool contiguous_ = false;
};

// first, first+1, ..., first+count-1.
std::vector<uint32_t> DeviceIdRange(uint32_t first, uint32_t count);

struct CredentialIdsResult {
  bool ok = false;
  std::string error;  // when !ok
  std::vector<uint32_t> ids;  // sorted
};

// The ids of every "device-<id>.crt" file in `directory` (decimal id, no
// sign, no leading zeros except "0"). Other files are ignored; a file that
// starts with "device-" and ends in ".crt" but has a malformed id is an
// error, as it is most likely a mistake in provisioning.
CredentialIdsResult ScanCredentialIds(const std::filesystem::path& directory);

}  // namespace nodefl::server
