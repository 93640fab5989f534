// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The secure-aggregate job's options and registration (job_catalog.h):
// secure aggregation on its own, synthetic inputs checked by the server
// (contract: protocol/secagg/job_format.h and aggregation_format.h).
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct SecureAggregateJobConfig {
  uint32_t length = 10000;      // words per vector
  std::string mode = "robust";  // robust (dropouts survived) | paper (kCAGC Protocol 4)
  std::string graph = "sparse"; // sparse (Bell et al.) | full
  uint32_t peers = 0;           // sparse: mask peers per device; 0 = 2 * ceil(log2 n)
  uint32_t threshold = 0;       // shares per secret; 0 = a strict majority of the peers
  uint32_t min_reporters = 0;   // 0 = the service's default
  uint32_t aggregations = 1;    // run one after another
  uint32_t step_timeout_ms = 60000;
  uint64_t input_seed = 1;
  uint64_t graph_seed = 1;
  double drop_fraction = 0;     // cut off this fraction of devices at drop_step (tests, benchmarks)
  std::string drop_step = "uploads";  // keys | uploads | reveals
  uint64_t drop_seed = 1;
};

template <>
std::unique_ptr<TableOptionGroup<SecureAggregateJobConfig>> MakeOptionGroup<SecureAggregateJobConfig>();

const JobKind& SecureAggregateKind();

}  // namespace nodefl::server::jobs
