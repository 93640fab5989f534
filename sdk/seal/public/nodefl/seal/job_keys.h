// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Per-job keys (version 2). Seal() takes its GCM nonce from a counter that a
// job starts at 1, so the keys a job seals under must be new every time a
// device starts (or restarts) its part of a job, whatever the server does:
// the server chooses job ids and salts, and it may repeat them (a rerun
// with a fixed seed, job ids restarting with the process) or replay an old
// JobStart on purpose. Keys derived from static pair keys, salt and job id
// alone would then repeat, and with them (key, nonce) pairs.
//
// So every device makes its own contribution: when a role starts a job it
// draws a fresh ephemeral P-256 key pair (JobKeyPair::Generate, from the
// caller's RNG, which must be seeded from real entropy), announces the
// public half to the server (wire JobKey), and the server hands it to the
// device's peers with its certificate (PeerCertificate.job_key). Between
// devices a and b:
//
//   ikm  = static pair keys (64, pair_keys.h) || x(e_a * E_b)     (96 bytes)
//   salt = the job's public salt
//   info = "nodefl job keys v2" || job_id (8, LE) || low_id (4, LE)
//          || high_id (4, LE) || E_low (65) || E_high (65)
//   okm  = key(low -> high) || key(high -> low)                  (64 bytes)
//
// What that gives:
//   * no (key, nonce) reuse: a device's counters live exactly as long as its
//     ephemeral key (both in RAM, both gone on restart), and a new ephemeral
//     key makes new job keys even if job id and salt repeat;
//   * no replay across restarts: the receiver's ephemeral key is new too, so
//     messages sealed for an earlier run of the job do not open;
//   * forward secrecy: ephemeral private keys are wiped when the job ends
//     (or the role starts another), so a device key stolen later does not
//     open recorded traffic;
//   * authentication: the static pair keys come from certified keys, so a
//     server that substitutes an ephemeral key (its own, or an old one)
//     gets keys nobody can use: the two devices' keys disagree and their
//     messages fail to open (denial of service, which a relay can always
//     do), but it learns nothing and can forge nothing.
// The ephemeral keys need no signature for that reason.
//
// Cost per job: one key generation per device (one P-256 multiplication)
// and one ECDH per peer (one multiplication), on top of the static pair
// keys, which a device keeps across jobs.
// Heap: key generation and ECDH allocate inside MbedTLS (bignums).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/peer_certificate.h"

namespace nodefl::seal {

inline constexpr size_t kMinJobSaltBytes = 16;
inline constexpr size_t kMaxJobSaltBytes = 32;
// An announced job key: SEC1 uncompressed P-256 point.
inline constexpr size_t kJobPublicKeyBytes = kP256PublicKeyBytes;

// This device's ephemeral key for one job. Wiped on destruction.
class JobKeyPair {
 public:
  JobKeyPair() = default;
  JobKeyPair(const JobKeyPair&) = delete;
  JobKeyPair& operator=(const JobKeyPair&) = delete;
  ~JobKeyPair() { Wipe(); }

  // Draws a fresh key pair for job `job_id` with public salt `salt`
  // (kMinJobSaltBytes .. kMaxJobSaltBytes bytes), replacing any earlier
  // one. kInvalidArgument for a bad salt or no RNG; kUnavailable if the RNG
  // fails. On error the pair is left wiped (not valid).
  Status Generate(uint64_t job_id, ConstByteSpan salt, crypto::RandomFunction random, void* random_context);

  // Forgets the private key (zeroed) and the job.
  void Wipe();

  bool valid() const { return valid_; }
  uint64_t job_id() const { return job_id_; }
  ConstByteSpan salt() const { return ConstByteSpan(salt_, salt_size_); }
  // The public key to announce (kJobPublicKeyBytes); empty when not valid.
  ConstByteSpan public_key() const {
    return valid_ ? ConstByteSpan(public_key_, kJobPublicKeyBytes) : ConstByteSpan();
  }

 private:
  friend Status DeriveJobKeys(const PairKeys&, const JobKeyPair&, uint32_t, ConstByteSpan, crypto::RandomFunction,
                              void*, PairKeys*);

  uint8_t private_key_[32] = {};
  uint8_t public_key_[kJobPublicKeyBytes] = {};
  uint8_t salt_[kMaxJobSaltBytes] = {};
  size_t salt_size_ = 0;
  uint64_t job_id_ = 0;
  bool valid_ = false;
};

// The job keys between this device (`own_id`, ephemeral key `own`) and the
// peer of `pair` whose announced job key is `peer_job_key`. `random`
// blinds the scalar multiplication. kInvalidArgument if `pair` or `own` is
// not valid or `own_id` is not one of the pair's ids; kUnauthenticated if
// the peer's job key is not a P-256 point (wrong size, off the curve).
// `out` gets the pair's ids and is written only on success.
Status DeriveJobKeys(const PairKeys& pair, const JobKeyPair& own, uint32_t own_id, ConstByteSpan peer_job_key,
                     crypto::RandomFunction random, void* random_context, PairKeys* out);

}  // namespace nodefl::seal
