// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Everything the server receives and publishes in the FedWalk HCT job, kept
// for the job's outputs and for the neighbour-recovery attack (what an
// honest-but-curious server could learn): the bin plan and dictionary it
// published and each device's round-2 upload.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "nodefl/privacy/privacy_mode.h"

namespace nodefl::server::fedwalk {

struct HctTranscript {
  PrivacyMode mode = PrivacyMode::kStrict;
  uint32_t vertex_count = 0;
  uint32_t bins = 0;
  uint32_t buckets = 0;
  std::vector<uint8_t> bin_plan;   // vertex_count entries (kAbsentBin: not in the job)
  std::vector<float> dictionary;   // vertex_count x bins; NaN rows: no degree vector
  // Round-2 uploads by device: paper mode M_v (rows x bins, Eq. 5 order),
  // strict mode H_v (bins x buckets).
  std::map<uint32_t, std::vector<float>> ordered_matrices;
  std::map<uint32_t, std::vector<int32_t>> histograms;
};

}  // namespace nodefl::server::fedwalk
