// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The values oblivious transfers move: 128-bit keys (the computational
// security parameter kappa = 128), and packed bit vectors (bit i of a
// vector is bit i % 8 of byte i / 8).
//
// Every OT here is a random-message OT with a chosen choice bit: the sender
// ends with two random keys (key0, key1), the receiver with its choice c and
// key_c, and learns nothing about key_{1-c}; the sender learns nothing about
// c. Protocols turn the keys into what they need (masks for tables, bits for
// Beaver triples), see compare/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"

namespace nodefl::ot {

inline constexpr size_t kOtKeyBytes = 16;

struct OtKey {
  uint8_t bytes[kOtKeyBytes] = {};
};

// 32 bytes naming one protocol run (who, which session, which purpose); it
// goes into every hash so that keys of different runs are unrelated.
inline constexpr size_t kOtTagBytes = 32;
struct OtTag {
  uint8_t bytes[kOtTagBytes] = {};
};

inline constexpr size_t BitBytes(size_t bits) { return (bits + 7) / 8; }

inline bool GetBit(ConstByteSpan bits, size_t i) { return ((bits[i / 8] >> (i % 8)) & 1u) != 0; }

inline void SetBit(ByteSpan bits, size_t i, bool value) {
  const uint8_t mask = static_cast<uint8_t>(1u << (i % 8));
  bits[i / 8] = static_cast<uint8_t>(value ? (bits[i / 8] | mask) : (bits[i / 8] & ~mask));
}

}  // namespace nodefl::ot
