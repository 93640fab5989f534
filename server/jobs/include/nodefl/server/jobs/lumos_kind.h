// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-trees plan's options and registration (job_catalog.h): Lumos's
// heterogeneity-aware tree constructor, greedy initialisation by secure
// comparisons (the secure-compare job, its compare_* options apply) and
// then trimming to the optimal workload (lumos_trim_job.h).
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct LumosJobConfig {
  // strict: the greedy comparison results stay on the devices and no device
  // reports its kept neighbours (the server learns workloads and the
  // drains' root bits only, docs/privacy.md); paper: both are reported, and
  // the server checks every edge's coverage itself.
  std::string privacy = "strict";
  // exact: drains to public thresholds (docs/lumos.md). The paper's MCMC
  // (Lumos Alg. 2 and 3) runs in the plaintext reference only
  // (nodefl-lumos-trim-reference); over secure comparisons it is not built.
  std::string method = "exact";
  uint32_t step_deadline_ms = 120000;
};

template <>
std::unique_ptr<TableOptionGroup<LumosJobConfig>> MakeOptionGroup<LumosJobConfig>();

const JobKind& LumosTreesKind();

}  // namespace nodefl::server::jobs
