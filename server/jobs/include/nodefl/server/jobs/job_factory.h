// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Builds the job the configuration names (ServerConfig::job) for the
// devices online when it starts.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodefl/server/config.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

// nullptr for "none" or an unknown name (ValidateConfig refuses those).
std::unique_ptr<Job> MakeJob(const ServerConfig& config, uint64_t job_id, std::vector<uint32_t> participants);

}  // namespace nodefl::server::jobs
