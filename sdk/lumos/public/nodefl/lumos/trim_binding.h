// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Hands a finished secure-compare job (Lumos Alg. 1, compare_role.h) over to
// the trimming role: for each neighbour, who keeps the edge and the pair's
// sealing state.
//
// Alg. 1 line 4: u keeps v iff round(ln deg v) >= round(ln deg u). On a tie
// both keep the edge and both know it, so the lower id drops it without any
// further message. An aborted comparison keeps the edge, and this device
// then assumes nothing about the other end.
#pragma once

#include "nodefl/compare/compare_role.h"
#include "nodefl/core/span.h"
#include "nodefl/lumos/trim_role.h"

namespace nodefl::lumos {

// One neighbour's starting state from this device's comparison outcome
// with it (Alg. 1 line 4, the tie drop, the abort rule); returns whether
// the device kept the edge after Alg. 1 itself (before the tie drop).
bool ApplyGreedyOutcome(compare::PeerOutcome outcome, uint32_t own_id, TrimPeer& peer);

// `peers` must list the same neighbours as `greedy`, in the same order, and
// `greedy` must have been told to hand its keys over
// (set_hand_over_keys(true)) before its job ended. kFailedPrecondition when
// the greedy job has not finished; kInvalidArgument when the neighbour
// lists differ. On success the role is bound (Bind()) and `greedy` no
// longer holds the keys (ForgetJobKeys()): one copy lives, in the trimming
// role, which wipes them when its job ends.
Status BindGreedy(compare::SecureCompareRole& greedy, uint32_t own_id, Span<TrimPeer> peers, LumosTrimRole& role);

}  // namespace nodefl::lumos
