// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The secure-compare job's options and registration (job_catalog.h):
// Lumos's greedy initialisation, one secure comparison per edge
// (contract: protocol/compare/job_format.h).
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct SecureCompareJobConfig {
  // Bits per compared value (1..kMaxCompareWidth). 5 holds round(ln d) for
  // any 32-bit degree d (at most 22), the greedy initialisation's value.
  uint32_t width = 5;
  uint32_t digit_bits = 0;  // 0: the plan's default (0..kMaxCompareDigitBits)
  // base | extension (IKNP without the KOS15 consistency check: secure only
  // against devices that follow the protocol; docs/secure-comparison.md).
  std::string mode = "base";
  std::string value = "log-degree";  // log-degree (round(ln deg)) | degree
  uint32_t max_sessions = 4;         // concurrent sessions per device
  uint32_t session_timeout_ms = 120000;
  bool results_public = true;  // devices report the result bits
};

template <>
std::unique_ptr<TableOptionGroup<SecureCompareJobConfig>> MakeOptionGroup<SecureCompareJobConfig>();

const JobKind& SecureCompareKind();

struct SecureCompareOptions;
// The secure-compare job's options from the configuration (validated), for
// plans that run it as a stage (lumos_kind.h).
SecureCompareOptions SecureCompareOptionsFrom(const ServerConfig& config, uint64_t job_id);

}  // namespace nodefl::server::jobs
