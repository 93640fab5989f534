// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// P_L's assignment from securely summed distances D_{i,r} = Σ_l d^l_{i,r}
// (kCAGC Protocol 2 lines 15 and 30): the 1/9 step after seeding (a point
// joins S_q only if D_{i,q} <= D_{i,p} / 9 for every p != q, otherwise it
// stays unassigned) and the nearest centre in Lloyd's iterations (ties to
// the lowest index). The rules are the participants' own (nodefl/kcagc/
// kmeans.h), so Protocol 1 on one machine and Protocol 2 across many
// assign identically from identical distances.
#pragma once

#include <cstdint>
#include <span>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::server::kcagc {

enum class AssignRule : uint8_t { kOneNinth, kNearest };

struct AssignmentStep {
  nodefl::kcagc::Assignment assignment;
  uint32_t unassigned = 0;  // the 1/9 step's ambiguous points
  uint32_t changed = 0;     // points whose cluster differs from `previous` (all when none)
};

// sums: points x centres, point-major. kInvalidArgument when the size is
// not points * centres or centres = 0.
[[nodiscard]] Result<AssignmentStep> AssignFromSums(std::span<const float> sums, size_t points, uint32_t centres,
                                                    AssignRule rule,
                                                    const nodefl::kcagc::Assignment* previous = nullptr);

}  // namespace nodefl::server::kcagc
