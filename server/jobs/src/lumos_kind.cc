// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_kind.h"

#include <array>
#include <utility>

#include "nodefl/server/jobs/lumos_trim_job.h"
#include "nodefl/server/jobs/secure_compare_job.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

namespace nodefl::server::jobs {
namespace {

using C = LumosJobConfig;

constexpr std::array<OptionSpec<C>, 3> kSpecs = {{
    {"lumos_privacy", &C::privacy,
     "lumos-trees: strict (comparison results and kept lists stay on the devices) or paper (both reported)"},
    {"lumos_method", &C::method, "lumos-trees trimming: exact (drains to public thresholds, docs/lumos.md)"},
    {"lumos_step_deadline_ms", &C::step_deadline_ms, "lumos-trees: deadline of one drain step"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  if (c.privacy != "strict" && c.privacy != "paper") return "lumos_privacy: '" + c.privacy + "' is not strict or paper";
  if (c.method == "mcmc") {
    return "lumos_method: mcmc (Lumos Alg. 2/3 over secure comparisons) is not built; run it in plaintext with "
           "nodefl-lumos-trim-reference";
  }
  if (c.method != "exact") return "lumos_method: '" + c.method + "' is not exact";
  if (c.step_deadline_ms == 0) return "lumos_step_deadline_ms: must be at least 1";
  return {};
}

bool Provides(std::string_view job) { return job == "lumos-trees"; }

std::vector<std::string> Stages(const ServerConfig&) { return {"secure-compare", "lumos-trim"}; }

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job* previous) {
  const C& c = Options<C>(config);
  const bool paper = c.privacy == "paper";
  if (stage == "secure-compare") {
    SecureCompareOptions options = SecureCompareOptionsFrom(config, job_id);
    // The plan's privacy decides whether the greedy results are reported.
    options.params.results_public = paper;
    return std::make_unique<SecureCompareJob>(options, std::move(participants));
  }
  if (stage != "lumos-trim") return nullptr;
  const auto* greedy = dynamic_cast<const SecureCompareJob*>(previous);
  if (greedy == nullptr || !greedy->finished()) return nullptr;
  LumosTrimOptions options;
  options.job_id = job_id;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.step_deadline_ms = c.step_deadline_ms;
  options.upload_kept = paper;
  options.output_dir = config.output_dir;
  std::vector<std::pair<uint32_t, uint32_t>> edges(greedy->edges().begin(), greedy->edges().end());
  return std::make_unique<LumosTrimJob>(options, greedy->participants(), std::move(edges));
}

constexpr JobKind kKind{"lumos-trees", "Lumos tree construction: greedy by secure comparisons, then exact trimming",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& LumosTreesKind() { return kKind; }

}  // namespace nodefl::server::jobs
