// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Shamir's t-of-n secret sharing over GF(2^61 - 1) (field.h), for the
// secrets dropout-robust aggregation shares among a device's peers (a mask
// seed, a key-agreement secret; Bonawitz et al., CCS'17): any t shares give
// the secret back, any t - 1 are uniformly distributed whatever the secret.
//
// A secret of up to kMaxSecretBytes is cut into 7-byte chunks (each below
// 2^56 < p, one field element); every chunk gets its own random polynomial
// of degree t - 1 with the chunk as its constant term, and a share holds
// the polynomials' values at the share's x (x != 0, distinct per holder).
// Memory: the caller's; no heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"

namespace nodefl::secagg {

inline constexpr size_t kMaxSecretBytes = 32;
inline constexpr size_t kChunkBytes = 7;
inline constexpr size_t kMaxChunks = (kMaxSecretBytes + kChunkBytes - 1) / kChunkBytes;  // 5

inline constexpr size_t ChunksFor(size_t secret_bytes) { return (secret_bytes + kChunkBytes - 1) / kChunkBytes; }

struct Share {
  uint64_t x = 0;                // the holder's point, 1 .. p - 1
  uint64_t y[kMaxChunks] = {};   // the polynomials' values there (ChunksFor(secret) of them used)
};

// Shares `secret` (1 .. kMaxSecretBytes bytes) with threshold t among
// xs.size() holders, out[i] for xs[i]. kInvalidArgument for t = 0, t >
// xs.size(), a secret of a bad size, an x of 0 or >= p, repeated xs, or
// out shorter than xs; the Drbg's error if it failed (nothing is then
// usable).
[[nodiscard]] Status ShareSecret(ConstByteSpan secret, uint32_t threshold, Span<const uint64_t> xs, Drbg& random,
                                 Span<Share> out);

// The secret of secret_out.size() bytes back from the first `threshold`
// shares (Lagrange interpolation at 0). kInvalidArgument for fewer shares
// than t, t = 0, a bad secret size, an x of 0 or >= p, repeated xs, a y
// >= p, or an interpolated chunk that does not fit its bytes (shares of
// several secrets mixed, or tampered: most such mixes are caught this way,
// not all; the shares' integrity is the sealed transport's job).
[[nodiscard]] Status ReconstructSecret(Span<const Share> shares, uint32_t threshold, ByteSpan secret_out);

}  // namespace nodefl::secagg
