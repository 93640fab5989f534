// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/neighbour_echo_kind.h"

#include <array>
#include <utility>

#include "nodefl/server/core/os_random.h"
#include "nodefl/server/jobs/neighbour_echo_runner_job.h"

namespace nodefl::server::jobs {
namespace {

using C = NeighbourEchoJobConfig;

// The help text below spells out the contract's bounds.
static_assert(echo::kEchoHeaderBytes == 56 && echo::kEchoMaxPayloadBytes == 4064, "update job_payload_bytes' help");

constexpr std::array<OptionSpec<C>, 2> kSpecs = {{
    {"job_messages_per_edge", &C::messages_per_edge,
     "neighbour-echo: sealed messages each device sends to each neighbour"},
    {"job_payload_bytes", &C::payload_bytes, "neighbour-echo: plaintext bytes per message (56..4064)"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  if (c.messages_per_edge == 0 || c.messages_per_edge > echo::kEchoMaxMessagesPerEdge) {
    return "job_messages_per_edge: must be 1.." + std::to_string(echo::kEchoMaxMessagesPerEdge);
  }
  if (c.payload_bytes < echo::kEchoHeaderBytes || c.payload_bytes > echo::kEchoMaxPayloadBytes) {
    return "job_payload_bytes: " + std::to_string(c.payload_bytes) + " is outside " +
           std::to_string(echo::kEchoHeaderBytes) + ".." + std::to_string(echo::kEchoMaxPayloadBytes);
  }
  return {};
}

bool Provides(std::string_view job) { return job == "neighbour-echo"; }

std::vector<std::string> Stages(const ServerConfig&) { return {"neighbour-echo"}; }

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job*) {
  if (stage != "neighbour-echo") return nullptr;
  const C& options = Options<C>(config);
  // A fresh public salt per job, from the OS (never a seeded generator);
  // the devices' ephemeral keys make their job keys unique whatever it is
  // (sdk/seal/public/nodefl/seal/job_keys.h).
  std::vector<uint8_t> salt(echo::kEchoJobSaltBytes);
  FillFromOsEntropy(salt);
  NeighbourEchoJob::Options job;
  job.job_id = job_id;
  job.round1_deadline_ms = config.job_round_deadline_ms;
  job.round2_deadline_ms = config.job_round_deadline_ms;
  return std::make_unique<NeighbourEchoRunnerJob>(job, std::move(participants), std::move(salt),
                                                  options.messages_per_edge, options.payload_bytes);
}

constexpr JobKind kKind{"neighbour-echo", "every device seals messages to its neighbours through the relay",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& NeighbourEchoKind() { return kKind; }

}  // namespace nodefl::server::jobs
