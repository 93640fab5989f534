// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// End-to-end keys between two devices, without any message exchange:
// static-static ECDH between one device's P-256 private key and the other's
// verified certificate key gives both the same shared secret; HKDF-SHA256
// turns it into two independent AES-256-GCM keys, one per direction, so the
// two devices never encrypt under the same key (and so never risk reusing a
// (key, nonce) pair between them).
//
//   ikm  = x-coordinate of d_own * Q_peer                      (32 bytes)
//   salt = "nodefl/seal/v1"
//   info = "nodefl seal pair keys" || low_id (4, BE) || high_id (4, BE)
//   okm  = key(low -> high) || key(high -> low)                (64 bytes)
//
// Both ids are bound in a fixed order (low, high), so each side derives the
// same pair whichever of them computes it. The keys are static for as long
// as both certificates are: see seal.h for what that means for counters.
// The shared secret and intermediate key material are wiped
// (mbedtls_platform_zeroize) before returning.
//
// Cost: one P-256 scalar multiplication (about 0.6 ms on a desktop core);
// derive once per neighbour and keep the PairKeys.
// Heap: the bignum and point arithmetic allocate inside MbedTLS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/seal/peer_certificate.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::seal {

inline constexpr size_t kSealKeyBytes = 32;  // AES-256
// A public name of a direction key, carried in every sealed message
// (seal.h): the first 8 bytes of SHA-256("nodefl seal key id v1" || key).
// It reveals nothing about the key and lets a receiver (or an auditor) see
// which key a message was sealed under without holding it.
inline constexpr size_t kSealKeyIdBytes = 8;

struct PairKeys {
  PairKeys() = default;
  PairKeys(const PairKeys&) = default;
  PairKeys& operator=(const PairKeys&) = default;
  ~PairKeys() { Wipe(); }

  // Zeroes the keys and marks the pair invalid.
  void Wipe();
  // Takes both direction keys from 64 bytes of HKDF output (low->high
  // first), computes their key ids and marks the keys valid.
  void Assign(uint32_t low, uint32_t high, const uint8_t (&okm)[2 * kSealKeyBytes]);

  uint32_t low_id = 0;   // min(own id, peer id)
  uint32_t high_id = 0;  // max(own id, peer id)
  uint8_t low_to_high[kSealKeyBytes] = {};
  uint8_t high_to_low[kSealKeyBytes] = {};
  uint8_t low_to_high_id[kSealKeyIdBytes] = {};
  uint8_t high_to_low_id[kSealKeyIdBytes] = {};
  bool valid = false;
};

// Derives the keys between this device (`own`'s private key, whose
// certificate must name `own_id`) and `peer` (verified with
// VerifyPeerCertificate for `peer_id`). `random` blinds the scalar
// multiplication against timing side channels (nodefl::crypto::DrbgRandom on a
// device). kInvalidArgument if the ids are equal, do not match the
// certificates, or `peer` is not valid; kFailedPrecondition if `own` has no
// identity; kUnauthenticated if the peer point is not on the curve. `out` is
// written only on success.
Status DerivePairKeys(const tls::TlsCredentials& own, const PeerPublicKey& peer, uint32_t own_id,
                      uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                      PairKeys* out);

}  // namespace nodefl::seal
