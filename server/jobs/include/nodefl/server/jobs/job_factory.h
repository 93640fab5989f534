// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Builds the job the configuration names (ServerConfig::job) for the
// devices online when it starts, through the job catalog (job_catalog.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

// The stages ServerConfig::job runs, in order, from its registered kind
// (job_catalog.h); empty for "none" or an unknown job.
std::vector<std::string> JobStages(const ServerConfig& config);

// The job for one stage; `previous` is the previous stage's job (nullptr
// for the first). nullptr for an unknown stage, or a walk stage without a
// finished HCT job before it.
std::unique_ptr<Job> MakeJob(const ServerConfig& config, const std::string& stage, uint64_t job_id,
                             std::vector<uint32_t> participants, const Job* previous = nullptr);

}  // namespace nodefl::server::jobs
