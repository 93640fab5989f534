// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The key agreement behind the pair masks (masks.h). Each device draws a
// fresh P-256 key pair per aggregation round and announces the public key;
// u's pair seed with v is
//   s_uv = SHA-256(label | round (8) | low id (4) | high id (4) | x(a_u B_v))
// which v computes alike from its own secret and u's public key. Because
// the secret is 32 bytes, a device Shamir-shares it (shamir.h) with its
// peers: if it drops after its peers masked with it, the server
// reconstructs the secret from t shares (RoundKeyPair::FromSecret) and
// recomputes the seeds the survivors hold with it, to remove their masks
// (Bonawitz et al., CCS'17). A fresh pair per round keeps one round's
// reconstruction from opening another's masks.
//
// All group arithmetic is MbedTLS's (its bignum code allocates internally,
// as in sdk/seal); this module itself does not.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/secagg/masks.h"

namespace nodefl::secagg {

inline constexpr size_t kRoundSecretBytes = 32;
inline constexpr size_t kRoundPublicKeyBytes = 65;  // uncompressed P-256 point

class RoundKeyPair {
 public:
  RoundKeyPair() = default;
  RoundKeyPair(const RoundKeyPair&) = delete;
  RoundKeyPair& operator=(const RoundKeyPair&) = delete;
  ~RoundKeyPair() { Wipe(); }

  // A fresh pair. kInvalidArgument without an RNG; kUnavailable if it fails.
  [[nodiscard]] Status Generate(crypto::RandomFunction random, void* random_context);
  // The pair of a reconstructed secret (the server, for a dropped device).
  // kInvalidArgument for a wrong size or a scalar outside [1, n - 1].
  [[nodiscard]] Status FromSecret(ConstByteSpan secret);
  void Wipe();

  bool valid() const { return valid_; }
  ConstByteSpan secret() const { return valid_ ? ConstByteSpan(secret_, kRoundSecretBytes) : ConstByteSpan(); }
  ConstByteSpan public_key() const {
    return valid_ ? ConstByteSpan(public_key_, kRoundPublicKeyBytes) : ConstByteSpan();
  }

 private:
  uint8_t secret_[kRoundSecretBytes] = {};
  uint8_t public_key_[kRoundPublicKeyBytes] = {};
  bool valid_ = false;
};

// s_uv of `own` (device own_id) with the device peer_id whose round public
// key is `peer_public`, for `round`. kInvalidArgument for an invalid own
// pair, no RNG or equal ids; kUnauthenticated for a peer key that is not a
// P-256 point. `random` blinds the scalar multiplication.
[[nodiscard]] Status PairMaskSeed(const RoundKeyPair& own, uint32_t own_id, ConstByteSpan peer_public, uint32_t peer_id,
                                  uint64_t round, crypto::RandomFunction random, void* random_context, MaskSeed* out);

}  // namespace nodefl::secagg
