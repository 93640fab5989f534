// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/ot/bit_matrix.h"

namespace nodefl::ot {

namespace {

// Transposes the 8 x 8 bit block whose rows are in[0..7] (bit c of byte r)
// into out[0..7] (bit r of byte c).
void Transpose8(const uint8_t* in, unsigned in_stride, uint8_t* out, unsigned out_stride) {
  uint64_t x = 0;
  for (unsigned r = 0; r < 8; ++r) x |= static_cast<uint64_t>(in[r * in_stride]) << (8 * r);
  // Swap the off-diagonal 1x1, 2x2 and 4x4 sub-blocks (bit r*8+c <-> c*8+r).
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  for (unsigned c = 0; c < 8; ++c) out[c * out_stride] = static_cast<uint8_t>(x >> (8 * c));
}

}  // namespace

void TransposeBitMatrix(const uint8_t (&in)[kBitMatrixSide][kBitMatrixRowBytes],
                        uint8_t (&out)[kBitMatrixSide][kBitMatrixRowBytes]) {
  // Block (R, C) of 8 x 8 bits: rows 8R..8R+7 of `in`, byte C; it lands in
  // rows 8C..8C+7 of `out`, byte R.
  for (unsigned br = 0; br < kBitMatrixRowBytes; ++br) {
    for (unsigned bc = 0; bc < kBitMatrixRowBytes; ++bc) {
      Transpose8(&in[8 * br][bc], kBitMatrixRowBytes, &out[8 * bc][br], kBitMatrixRowBytes);
    }
  }
}

}  // namespace nodefl::ot
