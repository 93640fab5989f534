// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Arithmetic in GF(p), p = 2^61 - 1 (a Mersenne prime): the field Shamir
// sharing works in (shamir.h). Large enough that a fleet's share indices
// never run out and a 7-byte chunk of a secret is one element; reduction
// is shifts and adds. Portable: the 122-bit product is assembled from
// 32-bit halves, so 32-bit ARM (no 128-bit integers) gets the same results.
#pragma once

#include <cstdint>

namespace nodefl::secagg {

inline constexpr uint64_t kFieldPrime = (uint64_t{1} << 61) - 1;

// Inputs must be reduced (< kFieldPrime); so are the outputs.
uint64_t FieldAdd(uint64_t a, uint64_t b);
uint64_t FieldSub(uint64_t a, uint64_t b);
uint64_t FieldMul(uint64_t a, uint64_t b);
// a^e.
uint64_t FieldPow(uint64_t a, uint64_t e);
// a^-1 (Fermat: a^(p-2)); 0 for a = 0, which has none: callers check.
uint64_t FieldInverse(uint64_t a);

}  // namespace nodefl::secagg
