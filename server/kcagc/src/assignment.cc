// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/assignment.h"

#include <algorithm>

#include "nodefl/kcagc/kmeans.h"

namespace nodefl::server::kcagc {

Result<AssignmentStep> AssignFromSums(std::span<const float> sums, size_t points, uint32_t centres, AssignRule rule,
                                      const nodefl::kcagc::Assignment* previous) {
  if (centres == 0 || sums.size() != points * centres || (previous != nullptr && previous->size() != points)) {
    return Status::InvalidArgument();
  }
  const Span<const float> d(sums.data(), sums.size());
  AssignmentStep step;
  step.assignment = rule == AssignRule::kOneNinth ? nodefl::kcagc::AssignOneNinth(d, points, centres)
                                                  : nodefl::kcagc::AssignNearest(d, points, centres);
  step.unassigned = static_cast<uint32_t>(
      std::count(step.assignment.begin(), step.assignment.end(), nodefl::kcagc::kUnassigned));
  for (size_t i = 0; i < points; ++i) {
    if (previous == nullptr || (*previous)[i] != step.assignment[i]) ++step.changed;
  }
  return step;
}

}  // namespace nodefl::server::kcagc
