// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/field.h"

namespace nodefl::secagg {
namespace {

// x mod p for x < 2^64: 2^61 = 1 (mod p), so fold the top bits down.
uint64_t Reduce64(uint64_t x) {
  x = (x & kFieldPrime) + (x >> 61);
  return x >= kFieldPrime ? x - kFieldPrime : x;
}

}  // namespace

uint64_t FieldAdd(uint64_t a, uint64_t b) {
  const uint64_t s = a + b;  // < 2^62: no overflow
  return s >= kFieldPrime ? s - kFieldPrime : s;
}

uint64_t FieldSub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + kFieldPrime - b; }

uint64_t FieldMul(uint64_t a, uint64_t b) {
  // a, b < 2^61: a * b < 2^122 as hi * 2^64 + lo from four 32x32 products.
  const uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32;
  const uint64_t b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);  // < 3 * 2^32
  const uint64_t lo = (p00 & 0xFFFFFFFFu) | (mid << 32);
  const uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  // a*b = hi * 2^64 + lo, and 2^64 = 2^3 * 2^61 = 8 (mod p); hi < 2^58, so
  // hi * 8 < 2^61. Fold lo's top three bits too.
  const uint64_t folded = (lo & kFieldPrime) + (lo >> 61) + (hi << 3);  // < 2^61 + 8 + 2^61
  return Reduce64(folded);
}

uint64_t FieldPow(uint64_t a, uint64_t e) {
  uint64_t result = 1;
  while (e != 0) {
    if ((e & 1u) != 0) result = FieldMul(result, a);
    a = FieldMul(a, a);
    e >>= 1;
  }
  return result;
}

uint64_t FieldInverse(uint64_t a) { return a == 0 ? 0 : FieldPow(a, kFieldPrime - 2); }

}  // namespace nodefl::secagg
