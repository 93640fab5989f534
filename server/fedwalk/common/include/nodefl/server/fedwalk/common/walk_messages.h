// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalk Theorem 4.2 (App. A.2): the expected device-to-device messages
// of one walk. The walk job prints it beside the measured mean, and the
// in-process simulation checks its counts against it; one implementation
// for both.
#pragma once

#include <cstdint>

namespace nodefl::server::fedwalk {

// Expected messages of a walk of l entries with jump probability p: the
// recurrence E_1 = 0, E_2 = 1, E_l = p (E_{l-2} + 1) + (1 - p) (E_{l-1} + 1)
// (one message per forward; a jump adds two entries). It solves to
// E_l = 1 + (l-2)/(1+p) - p^2 (1 - (-p)^(l-2)) / (1+p)^2, 32.64 at the
// paper's l = 40, p = 0.2; the paper's printed Eq. 21 (32.31) does not
// satisfy E_2 = 1 (docs/fedwalk.md, "Theorem 4.2").
double ExpectedMessagesPerWalk(uint32_t l, double p);

}  // namespace nodefl::server::fedwalk
