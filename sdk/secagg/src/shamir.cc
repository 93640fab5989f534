// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/shamir.h"

#include "nodefl/secagg/field.h"

namespace nodefl::secagg {
namespace {

bool ValidPoints(const uint64_t* xs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (xs[i] == 0 || xs[i] >= kFieldPrime) return false;
    for (size_t j = 0; j < i; ++j) {
      if (xs[j] == xs[i]) return false;
    }
  }
  return true;
}

// Chunk c of the secret as a field element (little endian, up to 7 bytes).
uint64_t ChunkOf(ConstByteSpan secret, size_t c) {
  uint64_t v = 0;
  const size_t begin = c * kChunkBytes;
  for (size_t i = 0; i < kChunkBytes && begin + i < secret.size(); ++i) v |= uint64_t{secret[begin + i]} << (8 * i);
  return v;
}

// A uniform field element: 61 random bits, rejected when >= p (a chance of
// 2^-61), so no value is favoured.
Status RandomElement(Drbg& random, uint64_t* out) {
  for (;;) {
    const uint64_t v = random.NextU64() >> 3;
    NODEFL_TRY(random.status());
    if (v < kFieldPrime) {
      *out = v;
      return Status::Ok();
    }
  }
}

}  // namespace

Status ShareSecret(ConstByteSpan secret, uint32_t threshold, Span<const uint64_t> xs, Drbg& random,
                   Span<Share> out) {
  if (secret.empty() || secret.size() > kMaxSecretBytes || threshold == 0 || threshold > xs.size() ||
      out.size() < xs.size() || !ValidPoints(xs.data(), xs.size())) {
    return Status::InvalidArgument();
  }
  const size_t chunks = ChunksFor(secret.size());
  for (size_t i = 0; i < xs.size(); ++i) out[i] = Share{xs[i], {}};
  for (size_t c = 0; c < chunks; ++c) {
    // f(x) = s + a_1 x + ... + a_{t-1} x^{t-1}, evaluated at every x by
    // Horner's rule, one coefficient drawn at a time (no storage for them):
    // y_i = (((a_{t-1}) x + a_{t-2}) x + ... ) x + s.
    for (size_t i = 0; i < xs.size(); ++i) out[i].y[c] = 0;
    for (uint32_t k = threshold - 1; k >= 1; --k) {
      uint64_t a = 0;
      NODEFL_TRY(RandomElement(random, &a));
      for (size_t i = 0; i < xs.size(); ++i) out[i].y[c] = FieldMul(FieldAdd(out[i].y[c], a), xs[i]);
    }
    const uint64_t s = ChunkOf(secret, c);
    for (size_t i = 0; i < xs.size(); ++i) out[i].y[c] = FieldAdd(out[i].y[c], s);
  }
  return Status::Ok();
}

Status ReconstructSecret(Span<const Share> shares, uint32_t threshold, ByteSpan secret_out) {
  if (threshold == 0 || shares.size() < threshold || secret_out.empty() || secret_out.size() > kMaxSecretBytes) {
    return Status::InvalidArgument();
  }
  // No bound on t: the full mask graph of 1,000 devices has t = 500. The
  // points are read in place; O(t^2) checks and products either way.
  const size_t chunks = ChunksFor(secret_out.size());
  for (uint32_t i = 0; i < threshold; ++i) {
    const uint64_t x = shares[i].x;
    if (x == 0 || x >= kFieldPrime) return Status::InvalidArgument();
    for (uint32_t j = 0; j < i; ++j) {
      if (shares[j].x == x) return Status::InvalidArgument();
    }
    for (size_t c = 0; c < chunks; ++c) {
      if (shares[i].y[c] >= kFieldPrime) return Status::InvalidArgument();
    }
  }
  // Lagrange basis at 0, l_i = prod_{j != i} x_j / (x_j - x_i), computed
  // once for every chunk.
  uint64_t s[kMaxChunks] = {};
  for (uint32_t i = 0; i < threshold; ++i) {
    uint64_t num = 1, den = 1;
    for (uint32_t j = 0; j < threshold; ++j) {
      if (j == i) continue;
      num = FieldMul(num, shares[j].x);
      den = FieldMul(den, FieldSub(shares[j].x, shares[i].x));
    }
    const uint64_t l = FieldMul(num, FieldInverse(den));
    for (size_t c = 0; c < chunks; ++c) s[c] = FieldAdd(s[c], FieldMul(shares[i].y[c], l));
  }
  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * kChunkBytes;
    const size_t bytes = secret_out.size() - begin < kChunkBytes ? secret_out.size() - begin : kChunkBytes;
    if (bytes < 8 && (s[c] >> (8 * bytes)) != 0) return Status::InvalidArgument();
    for (size_t b = 0; b < bytes; ++b) secret_out[begin + b] = static_cast<uint8_t>(s[c] >> (8 * b));
  }
  return Status::Ok();
}

}  // namespace nodefl::secagg
