// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/secure_compare_kind.h"

#include <array>
#include <limits>
#include <utility>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/server/jobs/secure_compare_job.h"

namespace nodefl::server::jobs {
namespace {

using C = SecureCompareJobConfig;
namespace contract = nodefl::compare;

constexpr std::array<OptionSpec<C>, 7> kSpecs = {{
    {"compare_width", &C::width, "secure-compare bits per compared value (1..32; default 5 holds round(ln degree))"},
    {"compare_digit_bits", &C::digit_bits,
     "secure-compare digit size in bits (0 = whole value up to 8 bits, else 4; at most 8)"},
    {"compare_mode", &C::mode,
     "secure-compare oblivious transfers: base or extension (IKNP without the KOS15 check: semi-honest "
     "only, a device that deviates from the protocol can learn its peer's value)"},
    {"compare_value", &C::value, "secure-compare value: log-degree (round(ln deg), Lumos Eq. 15) or degree"},
    {"compare_max_sessions", &C::max_sessions, "secure-compare sessions each device runs at once (1..65535)"},
    {"compare_session_timeout_ms", &C::session_timeout_ms,
     "secure-compare: a session unsettled this long after its start is aborted"},
    {"compare_results_public", &C::results_public,
     "secure-compare: true (devices report result bits; the server writes greedy-init.tsv) or false"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  // The limits the devices apply (protocol/compare/job_format.h).
  if (c.width < 1 || c.width > contract::kMaxCompareWidth) {
    return "compare_width: " + std::to_string(c.width) + " is outside 1.." +
           std::to_string(contract::kMaxCompareWidth);
  }
  if (c.digit_bits > contract::kMaxCompareDigitBits) {
    return "compare_digit_bits: " + std::to_string(c.digit_bits) + " is outside 0.." +
           std::to_string(contract::kMaxCompareDigitBits);
  }
  if (c.mode != "base" && c.mode != "extension") return "compare_mode: '" + c.mode + "' is not base or extension";
  if (c.value != "log-degree" && c.value != "degree") {
    return "compare_value: '" + c.value + "' is not log-degree or degree";
  }
  constexpr uint32_t kMaxSessions = std::numeric_limits<uint16_t>::max();  // a u16 in the parameters
  if (c.max_sessions == 0 || c.max_sessions > kMaxSessions) {
    return "compare_max_sessions: " + std::to_string(c.max_sessions) + " is outside 1.." + std::to_string(kMaxSessions);
  }
  if (c.session_timeout_ms == 0) return "compare_session_timeout_ms: must be at least 1";
  return {};
}

bool Provides(std::string_view job) { return job == "secure-compare"; }

std::vector<std::string> Stages(const ServerConfig&) { return {"secure-compare"}; }

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job*) {
  if (stage != "secure-compare") return nullptr;
  return std::make_unique<SecureCompareJob>(SecureCompareOptionsFrom(config, job_id), std::move(participants));
}

constexpr JobKind kKind{"secure-compare", "Lumos greedy initialisation by secure comparisons", &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& SecureCompareKind() { return kKind; }

SecureCompareOptions SecureCompareOptionsFrom(const ServerConfig& config, uint64_t job_id) {
  const C& c = Options<C>(config);
  // Validate() checked every value; the job draws its own salt.
  SecureCompareOptions options;
  options.job_id = job_id;
  options.params.width = static_cast<uint8_t>(c.width);
  options.params.digit_bits = static_cast<uint8_t>(c.digit_bits);
  options.params.mode = c.mode == "extension" ? contract::OtMode::kExtension : contract::OtMode::kBase;
  options.params.value = c.value == "degree" ? contract::CompareValue::kDegree : contract::CompareValue::kLogDegree;
  options.params.results_public = c.results_public;
  options.params.max_sessions = static_cast<uint16_t>(c.max_sessions);
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.session_timeout_ms = c.session_timeout_ms;
  options.output_dir = config.output_dir;
  return options;
}

}  // namespace nodefl::server::jobs
