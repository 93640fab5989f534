// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The textbook DTW of FedWalk Eq. 6-7 (the recurrence and the empty-matrix
// rule are in nodefl/server/fedwalk/dissimilarity/dtw.h): the baseline
// nodefl-dtw-bench times DtwL1 against, and the oracle the dissimilarity
// tests check DtwL1 with. Not part of the server: nothing it links uses it.
#pragma once

#include <cstddef>

namespace nodefl::server::fedwalk {

// A full (x+1) x (y+1) matrix of doubles allocated per call, every cell's
// L1 distance computed in double (~1e-12 relative error). a and b are
// row-major with k floats per row.
double DtwL1Reference(const float* a, size_t rows_a, const float* b, size_t rows_b, size_t k);

}  // namespace nodefl::server::fedwalk
