// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/fedwalk_walk_handoff.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::server::jobs {
namespace {
// version, mode, scaled encoder, vertex count, two doubles, device count.
constexpr uint8_t kVersion = 1;
constexpr size_t kFixedBytes = 1 + 1 + 1 + 4 + 8 + 8 + 4;
}  // namespace

std::vector<uint8_t> EncodeWalkHandOff(const WalkHandOff& h) {
  std::vector<uint8_t> out(kFixedBytes + 4 * h.devices.size());
  uint8_t* p = out.data();
  p[0] = kVersion;
  p[1] = static_cast<uint8_t>(h.mode);
  p[2] = h.scaled_encoder ? 1 : 0;
  StoreU32Le(h.vertex_count, p + 3);
  StoreF64Le(h.epsilon_per_encoding, p + 7);
  StoreF64Le(h.score_sensitivity, p + 15);
  StoreU32Le(static_cast<uint32_t>(h.devices.size()), p + 23);
  for (size_t i = 0; i < h.devices.size(); ++i) StoreU32Le(h.devices[i], p + kFixedBytes + 4 * i);
  return out;
}

bool DecodeWalkHandOff(std::span<const uint8_t> bytes, WalkHandOff* out) {
  if (bytes.size() < kFixedBytes || bytes[0] != kVersion || bytes[1] > 1 || bytes[2] > 1) return false;
  const uint8_t* p = bytes.data();
  const uint32_t count = LoadU32Le(p + 23);
  if ((bytes.size() - kFixedBytes) / 4 != count || (bytes.size() - kFixedBytes) % 4 != 0) return false;
  WalkHandOff h;
  h.mode = static_cast<PrivacyMode>(p[1]);
  h.scaled_encoder = p[2] == 1;
  h.vertex_count = LoadU32Le(p + 3);
  h.epsilon_per_encoding = LoadF64Le(p + 7);
  h.score_sensitivity = LoadF64Le(p + 15);
  h.devices.resize(count);
  for (uint32_t i = 0; i < count; ++i) h.devices[i] = LoadU32Le(p + kFixedBytes + 4 * size_t{i});
  *out = std::move(h);
  return true;
}

}  // namespace nodefl::server::jobs
