// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The SessionResult a party reports for one comparison session
// (protocol/compare/job_format.h), built from how its ComparisonSession
// ended. Shared by every role that runs comparison sessions (the
// secure-compare role, the Lumos MCMC role).
#pragma once

#include <cstdint>

#include "nodefl/compare/comparison_session.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/compare/job_format.h"

namespace nodefl::compare {

// `run`: the finished (done or aborted) session, or nullptr when the
// session was refused before it ran (`refusal` says why). With
// `results_public` a done session carries its result bits.
SessionResult MakeSessionResult(uint32_t session, uint16_t count, const ComparisonSession* run, Status refusal,
                                bool results_public);

}  // namespace nodefl::compare
