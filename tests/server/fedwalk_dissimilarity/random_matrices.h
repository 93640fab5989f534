// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Random test inputs shared by the dissimilarity tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace nodefl::server::fedwalk::test {

// rows x k floats, row-major, in [-5, 20): negative (noise can make counts
// negative) and non-integer values.
std::vector<float> RandomMatrix(std::mt19937_64& rng, size_t rows, size_t k);

// A store of `vertices` ordered matrices with 0 .. max_rows rows each; the
// row-major copies go to `matrices` (one per vertex).
FeatureStore RandomOrderedStore(std::mt19937_64& rng, uint32_t vertices, uint32_t max_rows, uint32_t k,
                                std::vector<std::vector<float>>& matrices);

// A store of `vertices` histograms with counts in [-3, 12].
FeatureStore RandomHistogramStore(std::mt19937_64& rng, uint32_t vertices, uint32_t bins, uint32_t buckets);

}  // namespace nodefl::server::fedwalk::test
