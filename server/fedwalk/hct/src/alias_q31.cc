// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "alias_q31.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace nodefl::server::fedwalk {

void BuildAliasQ31(std::span<const double> weights, std::span<nodefl::fedwalk::CodebookEntry> out) {
  using nodefl::fedwalk::kQ31One;
  const size_t n = weights.size();
  double total = 0;
  for (double w : weights) total += w;

  // Every slot of the table holds 2^31 units, so the whole table is
  // n * 2^31 units (<= 2^41 for K <= 1024: exact in double and uint64).
  const uint64_t units = uint64_t{n} * kQ31One;
  std::vector<uint64_t> share(n);
  uint64_t assigned = 0;
  size_t largest = 0;
  for (size_t j = 0; j < n; ++j) {
    share[j] = static_cast<uint64_t>(std::llround(weights[j] / total * static_cast<double>(units)));
    assigned += share[j];
    if (weights[j] > weights[largest]) largest = j;
  }
  // Rounding leaves |units - assigned| <= n/2 units; the largest share
  // (>= 2^31 units) can absorb that without going negative.
  share[largest] += units - assigned;  // modular: also right when assigned > units

  // Vose: pair each under-full slot with an over-full entry that tops it up.
  // The shares sum to exactly n * 2^31, so when the under-full list runs dry
  // every remaining entry is exactly full.
  std::vector<size_t> small;
  std::vector<size_t> large;
  for (size_t j = 0; j < n; ++j) (share[j] < kQ31One ? small : large).push_back(j);
  while (!small.empty() && !large.empty()) {
    const size_t s = small.back();
    small.pop_back();
    const size_t l = large.back();
    out[s].accept_q31 = static_cast<uint32_t>(share[s]);
    out[s].alias = static_cast<uint32_t>(l);
    share[l] -= kQ31One - share[s];
    if (share[l] < kQ31One) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (size_t j : large) {
    out[j].accept_q31 = kQ31One;
    out[j].alias = static_cast<uint32_t>(j);
  }
  // Unreachable with exact sums; kept so a slot is never left undefined.
  for (size_t j : small) {
    out[j].accept_q31 = kQ31One;
    out[j].alias = static_cast<uint32_t>(j);
  }
}

}  // namespace nodefl::server::fedwalk
