// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/dissimilarity/histogram_emd.h"

namespace nodefl::server::fedwalk {

double HistogramEmd(const int32_t* a, const int32_t* b, uint32_t bins, uint32_t buckets) {
  double total = 0;
  for (uint32_t i = 0; i < bins; ++i) {
    int64_t cumulative = 0;
    for (uint32_t j = 0; j < buckets; ++j) {
      cumulative += int64_t{a[i * buckets + j]} - int64_t{b[i * buckets + j]};
      total += static_cast<double>(cumulative < 0 ? -cumulative : cumulative);
    }
  }
  return total;
}

}  // namespace nodefl::server::fedwalk
