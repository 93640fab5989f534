// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Builds the job the configuration names (ServerConfig::job) for the
// devices online when it starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

// The stages ServerConfig::job runs, in order: "fedwalk" is the HCT job
// then the walk job (whose participants are the devices that completed
// the HCT job); every other job is one stage. Empty for "none".
std::vector<std::string> JobStages(const std::string& job);
// The same for a whole configuration: "fedwalk" in strict mode is one stage,
// the cluster-histogram job ("fedwalk-histograms"); in paper mode the two
// stages above.
std::vector<std::string> JobStages(const ServerConfig& config);

// The job for one stage; `previous` is the previous stage's job (nullptr
// for the first). nullptr for an unknown stage, or a walk stage without a
// finished HCT job before it.
std::unique_ptr<Job> MakeJob(const ServerConfig& config, const std::string& stage, uint64_t job_id,
                             std::vector<uint32_t> participants, const Job* previous = nullptr);

}  // namespace nodefl::server::jobs
