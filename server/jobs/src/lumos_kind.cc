// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_kind.h"

#include <array>
#include <utility>

#include "nodefl/server/jobs/lumos_mcmc_job.h"
#include "nodefl/server/jobs/lumos_trim_job.h"
#include "nodefl/server/jobs/secure_compare_job.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

namespace nodefl::server::jobs {
namespace {

using C = LumosJobConfig;

constexpr std::array<OptionSpec<C>, 5> kSpecs = {{
    {"lumos_privacy", &C::privacy,
     "lumos-trees: strict (comparison results and kept lists stay on the devices) or paper (both reported)"},
    {"lumos_method", &C::method,
     "lumos-trees trimming: exact (drains to public thresholds, docs/lumos.md) or mcmc (Lumos Alg. 2/3 over "
     "secure comparisons; needs lumos_privacy=paper)"},
    {"lumos_step_deadline_ms", &C::step_deadline_ms,
     "lumos-trees: deadline of one drain step (exact) or of one comparison step, move or revert (mcmc)"},
    {"lumos_mcmc_iterations", &C::mcmc_iterations,
     "lumos-trees mcmc: iterations of Lumos Alg. 2 (300: the paper's LastFM setting)"},
    {"lumos_mcmc_seed", &C::mcmc_seed, "lumos-trees mcmc: seed of the server's picks and Eq. 18 draws (0: random)"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  if (c.privacy != "strict" && c.privacy != "paper") return "lumos_privacy: '" + c.privacy + "' is not strict or paper";
  if (c.method != "exact" && c.method != "mcmc") return "lumos_method: '" + c.method + "' is not exact or mcmc";
  if (c.method == "mcmc" && c.privacy != "paper") {
    // Alg. 3 picks the maximum from comparison results the server reads.
    return "lumos_method: mcmc needs lumos_privacy=paper (the server learns every workload comparison result; "
           "Lumos Alg. 3 needs them public)";
  }
  if (c.step_deadline_ms == 0) return "lumos_step_deadline_ms: must be at least 1";
  if (c.mcmc_iterations == 0) return "lumos_mcmc_iterations: must be at least 1";
  return {};
}

bool Provides(std::string_view job) { return job == "lumos-trees"; }

bool Mcmc(const ServerConfig& config) { return Options<C>(config).method == "mcmc"; }

std::vector<std::string> Stages(const ServerConfig& config) {
  if (Mcmc(config)) return {"secure-compare", "lumos-mcmc"};
  return {"secure-compare", "lumos-trim"};
}

// Lumos Alg. 2/3 from the greedy job's result; the comparisons run as the
// greedy job's did (OT mode, pacing, digits, session timeout), on 16-bit
// workloads instead of 5-bit log-degrees.
std::unique_ptr<Job> MakeMcmc(const ServerConfig& config, uint64_t job_id, const SecureCompareJob& greedy) {
  const C& c = Options<C>(config);
  const SecureCompareOptions compare = SecureCompareOptionsFrom(config, job_id);
  LumosMcmcOptions options;
  options.job_id = job_id;
  options.iterations = c.mcmc_iterations;
  options.seed = c.mcmc_seed;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.step_deadline_ms = c.step_deadline_ms;
  options.session_timeout_ms = compare.session_timeout_ms;
  options.digit_bits = compare.params.digit_bits;
  options.mode = compare.params.mode;
  options.max_sessions = compare.params.max_sessions;
  options.upload_kept = true;  // mcmc is paper mode only (Validate)
  options.output_dir = config.output_dir;
  std::vector<std::pair<uint32_t, uint32_t>> edges(greedy.edges().begin(), greedy.edges().end());
  return std::make_unique<LumosMcmcJob>(options, greedy.participants(), std::move(edges));
}

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
  if (stage != "lumos-trim" && stage != "lumos-mcmc") return nullptr;
  const auto* greedy = dynamic_cast<const SecureCompareJob*>(previous);
  if (greedy == nullptr || !greedy->finished()) return nullptr;
  if (stage == "lumos-mcmc") return MakeMcmc(config, job_id, *greedy);
  LumosTrimOptions options;
  options.job_id = job_id;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.step_deadline_ms = c.step_deadline_ms;
  options.upload_kept = paper;
  options.output_dir = config.output_dir;
  std::vector<std::pair<uint32_t, uint32_t>> edges(greedy->edges().begin(), greedy->edges().end());
  return std::make_unique<LumosTrimJob>(options, greedy->participants(), std::move(edges));
}

constexpr JobKind kKind{"lumos-trees",
                        "Lumos tree construction: greedy by secure comparisons, then exact trimming or the paper's MCMC",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& LumosTreesKind() { return kKind; }

}  // namespace nodefl::server::jobs
