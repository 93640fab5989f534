// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Transpose of a 128 x 128 bit matrix stored as 128 rows of 16 bytes (bit
// j of row i is GetBit(row i, j)). IKNP extension needs it once per block
// of 128 OTs: columns are what the PRG produces, rows are what each OT
// hashes.
#pragma once

#include <cstdint>

namespace nodefl::ot {

inline constexpr unsigned kBitMatrixSide = 128;
inline constexpr unsigned kBitMatrixRowBytes = kBitMatrixSide / 8;

// out[j] bit i = in[i] bit j. `in` and `out` must not overlap.
void TransposeBitMatrix(const uint8_t (&in)[kBitMatrixSide][kBitMatrixRowBytes],
                        uint8_t (&out)[kBitMatrixSide][kBitMatrixRowBytes]);

}  // namespace nodefl::ot
