// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every job the server can run. Each algorithm registers, next to its
// coordinators, one option group (its configuration keys, their defaults,
// ranges and consistency checks; the ranges come from the contract's
// constants in sdk/protocol) and a factory for its stages:
//   neighbour-echo                       neighbour_echo_kind.h
//   fedwalk, fedwalk-hct, fedwalk-histograms   fedwalk_kind.h
//   secure-compare                       secure_compare_kind.h
// This file only lists them; the server and its tools reach jobs through it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct JobKind {
  // The value of the `job` key, and a line for --help.
  std::string_view name;
  std::string_view help;
  // The stages this job runs, in order (most jobs: one, named like the job).
  std::vector<std::string> (*stages)(const ServerConfig& config);
  // The job for one stage; `previous` is the previous stage's job (nullptr
  // for the first). nullptr for a stage the kind does not make, or one whose
  // previous stage did not finish.
  std::unique_ptr<Job> (*make)(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                               std::vector<uint32_t> participants, const Job* previous);
};

// Every registered job kind, and the one named `name` (nullptr if none).
const std::vector<const JobKind*>& JobKinds();
const JobKind* FindJobKind(std::string_view name);

// The server's defaults plus every registered job's option group. Start
// every configuration that may run a job from this.
ServerConfig DefaultServerConfigWithJobs();
// Adds the job option groups `config` lacks (tests that start from the
// server's defaults).
void InstallJobOptions(ServerConfig& config);

// --help: the server's keys and every job's, then the jobs by name.
std::string JobsHelpText(const ServerConfig& defaults);

}  // namespace nodefl::server::jobs
