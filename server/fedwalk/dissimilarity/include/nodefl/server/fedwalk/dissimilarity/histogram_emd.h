// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Strict-mode dissimilarity between two noised degree histograms (the
// kDegreeHistogram upload: bins x buckets, row-major): per bin, the 1-D
// earth mover's distance between the two count profiles with unit ground
// distance between adjacent buckets, computed as the L1 distance between
// their cumulative sums over all buckets (the last term charges a
// difference in total mass, i.e. in degree). Summed over bins. Symmetric,
// zero on equal inputs, satisfies the triangle inequality. Server math: no
// device computes it.
#pragma once

#include <cstdint>

namespace nodefl::server::fedwalk {

double HistogramEmd(const int32_t* a, const int32_t* b, uint32_t bins, uint32_t buckets);

}  // namespace nodefl::server::fedwalk
