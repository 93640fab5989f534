// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/job_factory.h"

#include "nodefl/server/jobs/job_catalog.h"

namespace nodefl::server::jobs {

std::vector<std::string> JobStages(const ServerConfig& config) {
  if (config.job == "none" || config.job.empty()) return {};
  const JobKind* kind = FindJobKind(config.job);
  return kind == nullptr ? std::vector<std::string>{} : kind->stages(config);
}

std::unique_ptr<Job> MakeJob(const ServerConfig& config, const std::string& stage, uint64_t job_id,
                             std::vector<uint32_t> participants, const Job* previous) {
  const JobKind* kind = FindJobKind(config.job);
  if (kind == nullptr) return nullptr;
  return kind->make(config, stage, job_id, std::move(participants), previous);
}

}  // namespace nodefl::server::jobs
