// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/device_ids.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <system_error>

namespace nodefl::server {

DeviceIndex::DeviceIndex(std::vector<uint32_t> ids) : ids_(std::move(ids)) {
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  contiguous_ = ids_.empty() || (static_cast<uint64_t>(ids_.back()) - ids_.front() + 1 == ids_.size());
}

std::optional<size_t> DeviceIndex::SlotOf(uint32_t id) const {
  if (ids_.empty()) return std::nullopt;
  if (contiguous_) {
    if (id < ids_.front() || id > ids_.back()) return std::nullopt;
    return static_cast<size_t>(id - ids_.front());
  }
  const auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  if (it == ids_.end() || *it != id) return std::nullopt;
  return static_cast<size_t>(it - ids_.begin());
}

std::vector<uint32_t> DeviceIdRange(uint32_t first, uint32_t count) {
  std::vector<uint32_t> ids(count);
  for (uint32_t i = 0; i < count; ++i) ids[i] = first + i;
  return ids;
}

CredentialIdsResult ScanCredentialIds(const std::filesystem::path& directory) {
  constexpr std::string_view kPrefix = "device-";
  constexpr std::string_view kSuffix = ".crt";
  CredentialIdsResult result;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec) {
    result.error = directory.string() + ": cannot list (" + ec.message() + ")";
    return result;
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string_view view(name);
    if (view.size() <= kPrefix.size() + kSuffix.size() || !view.starts_with(kPrefix) ||
        !view.ends_with(kSuffix)) {
      continue;
    }
    const std::string_view digits =
        view.substr(kPrefix.size(), view.size() - kPrefix.size() - kSuffix.size());
    uint32_t id = 0;
    const auto [ptr, parse_ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    const bool leading_zero = digits.size() > 1 && digits.front() == '0';
    if (parse_ec != std::errc() || ptr != digits.data() + digits.size() || leading_zero) {
      result.error = (directory / name).string() + ": malformed device id '" + std::string(digits) + "'";
      return result;
    }
    result.ids.push_back(id);
  }
  if (ec) {
    result.error = directory.string() + ": cannot list (" + ec.message() + ")";
    return result;
  }
  std::sort(result.ids.begin(), result.ids.end());
  result.ok = true;
  return result;
}

}  // namespace nodefl::server
