// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The neighbour-echo job's options and registration (job_catalog.h).
#pragma once

#include <cstdint>

#include "nodefl/protocol/echo/job_format.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

// Benchmark load (the contract's bounds: protocol/echo/job_format.h).
struct NeighbourEchoJobConfig {
  uint32_t messages_per_edge = 1;                  // key job_messages_per_edge
  uint32_t payload_bytes = echo::kEchoHeaderBytes;  // key job_payload_bytes
};

template <>
std::unique_ptr<TableOptionGroup<NeighbourEchoJobConfig>> MakeOptionGroup<NeighbourEchoJobConfig>();

const JobKind& NeighbourEchoKind();

}  // namespace nodefl::server::jobs
