// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Hands a finished secure-compare job (Lumos Alg. 1, compare_role.h) over to
// the MCMC role: which neighbours the device keeps. Alg. 1 line 4 as the
// paper states it: u keeps v iff round(ln deg v) >= round(ln deg u), so on
// a tie both keep the edge (the exact method's tie drop is not part of the
// paper's MCMC). An aborted comparison keeps the edge.
//
// The MCMC job derives keys of its own (it also needs non-neighbours'), so
// the greedy job's keys are not taken over: the greedy role forgets them.
#pragma once

#include "nodefl/compare/compare_role.h"
#include "nodefl/core/span.h"
#include "nodefl/lumos/mcmc_role.h"

namespace nodefl::lumos {

// Whether Alg. 1 keeps the edge, from this device's comparison outcome.
bool GreedyKeeps(compare::PeerOutcome outcome);

// `peers` must list the same neighbours as `greedy`, in the same order.
// kFailedPrecondition when the greedy job has not finished; kInvalidArgument
// when the neighbour lists differ. On success the role is bound.
Status BindMcmcGreedy(compare::SecureCompareRole& greedy, Span<McmcPeer> peers, LumosMcmcRole& role);

}  // namespace nodefl::lumos
