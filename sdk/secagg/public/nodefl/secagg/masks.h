// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The masks of secure aggregation (Bonawitz et al., CCS'17; kCAGC
// Protocol 4 is the pairwise part alone): a device u adds to its encoded
// input (fixed_point.h) a self mask PRG(b_u) and, for every peer v it
// shares a pair seed s_uv with, +PRG(s_uv) if u < v and -PRG(s_uv) if
// u > v, all mod 2^32. Over a set of devices that all report, the pair
// masks cancel in the sum; the server removes the self masks of those that
// reported (their b_u reconstructed from Shamir shares, shamir.h) and the
// pair masks those reporters hold with peers that dropped (their s_uv
// recomputed from the dropped peer's reconstructed key). What it gets is
// the sum of the reporters' inputs and nothing else.
//
// PRG: AES-256 in counter mode (MbedTLS) keyed by the 32-byte seed; the
// 16-byte counter block is stream (8 bytes, LE) | block index (8 bytes,
// LE), so one seed feeds independent streams (one per round or vector).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::secagg {

inline constexpr size_t kSeedBytes = 32;

struct MaskSeed {
  uint8_t bytes[kSeedBytes] = {};
};

// out = the first out.size() words of the seed's stream `stream`.
// kInternal if MbedTLS fails.
[[nodiscard]] Status ExpandMask(const MaskSeed& seed, uint64_t stream, Span<uint32_t> out);

// What the mask operations add or take away (mod 2^32, in place):
// vector += sign * PRG(seed, stream). Memory: a 64-word block on the stack.
enum class MaskSign : int8_t { kAdd = 1, kSubtract = -1 };
[[nodiscard]] Status ApplyMask(const MaskSeed& seed, uint64_t stream, MaskSign sign, Span<uint32_t> vector);

// The sign of u's pair mask with v: + when u < v, - when u > v, so the two
// cancel. Callers never pair a device with itself.
inline MaskSign PairSign(uint32_t u, uint32_t v) { return u < v ? MaskSign::kAdd : MaskSign::kSubtract; }
// The sign that takes a mask applied with `sign` back out.
inline MaskSign Opposite(MaskSign sign) { return sign == MaskSign::kAdd ? MaskSign::kSubtract : MaskSign::kAdd; }

}  // namespace nodefl::secagg
