// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/secure_sums.h"

#include <algorithm>
#include <cmath>

namespace nodefl::server::kcagc {

uint64_t StageSecureSums(uint64_t points, uint32_t centres, uint32_t lloyd_iterations, uint32_t restarts) {
  return (uint64_t{restarts} + lloyd_iterations) * points * centres;
}

uint64_t StageRounds(uint32_t centres, uint32_t lloyd_iterations, bool joint_seeding, uint32_t restarts) {
  return uint64_t{restarts} * (joint_seeding ? uint64_t{centres} : 1u) + lloyd_iterations;
}

uint64_t JointSecureSums(uint64_t n, uint32_t block, uint32_t steps) {
  return kRangeRoundSums + uint64_t{steps} * n * block;
}

uint64_t JointRounds(uint32_t steps) { return 1u + uint64_t{steps}; }

double PaperBasicSecureSums(uint64_t n, uint32_t k, uint32_t q) {
  return (q + 1.0) * static_cast<double>(n) * k;
}

double PaperKcagcSecureSums(uint32_t k, uint32_t k_hat, uint32_t l, uint32_t q) {
  return (q + 1.0) * k * std::pow(static_cast<double>(k_hat), l);
}

double PaperTreeSecureSums(uint32_t k_hat, uint32_t l, uint32_t q) {
  return (q + 1.0) * l * std::pow(static_cast<double>(k_hat), 3);
}

double TreeSecureSumBound(uint64_t n, uint32_t k, uint32_t k_hat, uint32_t l, uint32_t q) {
  const double v = std::min(static_cast<double>(n), static_cast<double>(k_hat) * k_hat);
  const double lower = l >= 2 ? (l - 2.0) * v * k_hat : 0.0;
  return static_cast<double>(kRangeRoundSums) + (q + 1.0) * (lower + v * k);
}

}  // namespace nodefl::server::kcagc
