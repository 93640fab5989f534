// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/common/walk_messages.h"

namespace nodefl::server::fedwalk {

double ExpectedMessagesPerWalk(uint32_t l, double p) {
  if (l <= 1) return 0;
  double e_prev = 0, e = 1;  // E_{i-2}, E_{i-1}, from E_1, E_2
  for (uint32_t i = 3; i <= l; ++i) {
    const double next = p * (e_prev + 1) + (1 - p) * (e + 1);
    e_prev = e;
    e = next;
  }
  return e;
}

}  // namespace nodefl::server::fedwalk
