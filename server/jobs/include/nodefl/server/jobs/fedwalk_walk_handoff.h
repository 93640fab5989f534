// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What FedWalk's walk job takes from the finished HCT job (the plan's
// previous stage), as bytes (Job::HandOff): the server keeps them with the
// walk job so that it can make the walk job again after a restart without
// the HCT job (docs/reliability.md, "Server restarts").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/privacy/privacy_mode.h"

namespace nodefl::server::jobs {

struct WalkHandOff {
  PrivacyMode mode = PrivacyMode::kStrict;
  uint32_t vertex_count = 0;
  double epsilon_per_encoding = 0;  // HctSummary
  double score_sensitivity = 0;     // HctSummary
  bool scaled_encoder = false;
  std::vector<uint32_t> devices;    // those holding the tree and codebook
};

std::vector<uint8_t> EncodeWalkHandOff(const WalkHandOff& handoff);
// False for bytes that are not one (a wrong version, length or mode).
bool DecodeWalkHandOff(std::span<const uint8_t> bytes, WalkHandOff* out);

}  // namespace nodefl::server::jobs
