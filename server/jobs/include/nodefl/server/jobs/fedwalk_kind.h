// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalk's options and registration (job_catalog.h). Three job names share
// the options: fedwalk (paper mode: the HCT job then the walk job; strict
// mode: the cluster-histogram job), fedwalk-hct (the tree only) and
// fedwalk-histograms (the strict job by name). docs/fedwalk.md.
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct FedWalkJobConfig {
  // HCT (FedWalk Sec. 4.2).
  std::string mode = "strict";   // strict | paper
  uint32_t bins = 0;             // k; 0: floor(ln |V|)
  uint32_t buckets = 16;         // strict mode histogram buckets per bin
  double epsilon_bins = 2.0;     // degree vectors
  double epsilon_upload = 2.0;   // strict mode histograms
  double epsilon_walk = 2.0;     // Eq. 12 codebook
  uint32_t codebook_k = 256;     // most entries kept per codebook row
  std::string linkage = "average";  // average | complete | single
  // Eq. 12 encoder: raw (the paper's score; 2·ε·Δu per draw), scaled (score
  // / 2Δu; ε per draw), auto (scaled in strict mode, raw in paper mode).
  std::string encoder = "auto";
  // Eq. 10's score clipped to [-B, 0] in the codebook (post-processing of
  // the public score table), so the score's sensitivity is B. 0: no clip,
  // the paper's raw score (sensitivity = the run's largest |score|).
  double score_clip = 0;
  // Walks (Sec. 4.3) and SkipGram (Sec. 4.4). Defaults are the paper's.
  uint32_t walk_length = 40;       // l
  uint32_t walks_per_vertex = 80;  // gamma
  double p = 0.2;                  // 2-hop predictor probability
  // Where a 2-hop jump goes: neighbours (one of the device's other
  // neighbours; docs/fedwalk.md, "Where a jump goes") or tree (the paper's).
  std::string predictor = "neighbours";
  uint32_t walks_in_flight = 0;    // 0: 4 per device
  uint32_t walk_timeout_ms = 300000;
  uint32_t walk_stall_factor = 8;       // FedWalkWalkOptions::stall_factor
  uint32_t walk_stall_floor_ms = 10000;
  uint32_t dim = 128;
  uint32_t window = 10;
  uint32_t negative = 5;
  uint32_t epochs = 0;  // SkipGram passes over the walks, 0 = chosen from the walks
  uint64_t seed = 0;  // 0: random
  // Strict mode's cluster-histogram job (docs/fedwalk.md, "Strict mode").
  // Each device's total epsilon over its releases (the guarantee; the walks
  // are post-processing), the partition scheme (random | refined), the
  // clusters of the last release (0: one vertex per cluster, the measured
  // default) and the walk rule (reciprocal | direct). walk_length counts
  // vertices, the start included, for these walks.
  double strict_epsilon = 4.0;
  std::string strict_partition = "random";
  uint32_t strict_clusters = 0;
  std::string strict_walk_rule = "reciprocal";
};

template <>
std::unique_ptr<TableOptionGroup<FedWalkJobConfig>> MakeOptionGroup<FedWalkJobConfig>();

const JobKind& FedWalkKind();
const JobKind& FedWalkHctKind();
const JobKind& FedWalkHistogramsKind();

}  // namespace nodefl::server::jobs
