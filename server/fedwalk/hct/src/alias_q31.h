// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Walker/Vose alias table in the integer form devices sample from (see
// nodefl::fedwalk::SampleCodebookRow): pick entry i uniformly, keep it with
// probability accept_q31 / 2^31, otherwise take entries[alias].
#pragma once

#include <span>

#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {

// Fills accept_q31 and alias of out[0 .. n) (n = weights.size() =
// out.size() >= 1, weights >= 0 with a positive sum; vertex ids are left
// alone). The target distribution is quantised to multiples of
// 1 / (n * 2^31) first and the table is then built in exact integer
// arithmetic, so the probability a device draws entry j is exactly the
// quantised weight: within 1 / (n * 2^31) of weights[j] / sum, except for
// the largest entry, which absorbs the rounding remainder (<= 1 / 2^32).
void BuildAliasQ31(std::span<const double> weights, std::span<nodefl::fedwalk::CodebookEntry> out);

}  // namespace nodefl::server::fedwalk
