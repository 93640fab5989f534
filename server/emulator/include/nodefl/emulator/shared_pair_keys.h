// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SharedPairKeys: a seal::PairKeySource for one emulator process hosting
// thousands of devices. In a FedWalk walk job nearly all of the emulator's
// CPU goes to P-256 arithmetic: every device checks the certificate of each
// peer it talks to and runs ECDH with it, so a pair costs both of its
// devices a verification and a scalar multiplication. Real devices each pay
// only their own share, on their own CPU; in one process the same work is
// repeated for every pair. This memo lets the emulated devices share it:
//   * a certificate that verified for device id X is remembered byte for
//     byte; a device that later receives exactly those bytes for X skips
//     the check (any other bytes are checked in full);
//   * pair keys are symmetric (both devices derive the same ones), so the
//     first device of a pair to need them computes them and the second
//     reuses them;
//   * so are a job's keys (seal/job_keys.h): the first device of a pair
//     runs the ECDH on the two ephemeral keys and leaves the result for
//     the second, which takes it only if everything the derivation reads
//     matches (job id, salt, pair keys, its own ephemeral public key and
//     the one it was handed for the peer) and otherwise derives alone. A
//     pair's entry is dropped once its second device took it, so the memo
//     holds only pairs that one side has not reached yet.
// The keys every device ends up with are exactly those it would have
// computed alone. All emulated devices pin the same CA, so a verification
// for one holds for all. Counters report how much a fleet of real devices
// would have computed and how much the emulator did; nodefl-emulate
// --no-shared-pair-keys turns the memo off. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "nodefl/seal/pair_key_source.h"
#include "nodefl/seal/peer_certificate.h"

namespace nodefl::emulator {

class SharedPairKeys {
 public:
  struct Counters {
    uint64_t derivations = 0;    // pair keys the devices asked for
    uint64_t verifications = 0;  // certificate checks run
    uint64_t ecdh = 0;           // pair-key scalar multiplications run
    uint64_t failures = 0;       // derivations that returned an error
    uint64_t job_derivations = 0;  // job keys the devices asked for
    uint64_t job_ecdh = 0;         // job-key ECDH run
    uint64_t job_failures = 0;     // job derivations that returned an error
  };

  seal::PairKeySource source() {
    return seal::PairKeySource{&SharedPairKeys::Thunk, &SharedPairKeys::JobThunk, this};
  }
  Counters counters() const;

 private:
  struct Verified {
    std::vector<uint8_t> certificate_der;
    seal::PeerPublicKey public_key;
  };

  static Status Thunk(void* self, const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id,
                      uint32_t peer_id, crypto::RandomFunction random, void* random_context, seal::PairKeys* out);
  Status Derive(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id, uint32_t peer_id,
                crypto::RandomFunction random, void* random_context, seal::PairKeys* out);
  static Status JobThunk(void* self, const seal::PairKeys& pair, const seal::JobKeyPair& own, uint32_t own_id,
                         ConstByteSpan peer_job_key, crypto::RandomFunction random, void* random_context,
                         seal::PairKeys* out);
  Status DeriveJob(const seal::PairKeys& pair, const seal::JobKeyPair& own, uint32_t own_id,
                   ConstByteSpan peer_job_key, crypto::RandomFunction random, void* random_context,
                   seal::PairKeys* out);
  Status PublicKeyOf(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t peer_id,
                     seal::PeerPublicKey* out);

  // What one side of a pair derived for a job, for the other side.
  struct JobEntry {
    uint64_t job_id = 0;
    std::vector<uint8_t> salt;
    std::vector<uint8_t> low_job_key, high_job_key;  // the ephemeral public keys
    seal::PairKeys pair_keys;                        // what it was derived from
    seal::PairKeys job_keys;                         // the result
  };
  static bool Matches(const JobEntry& entry, const seal::PairKeys& pair, const seal::JobKeyPair& own,
                      ConstByteSpan low_job_key, ConstByteSpan high_job_key);

  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, Verified> verified_;  // by device id
  std::unordered_map<uint64_t, seal::PairKeys> pairs_;  // by low_id << 32 | high_id
  std::unordered_map<uint64_t, JobEntry> jobs_;  // by low_id << 32 | high_id
  std::atomic<uint64_t> derivations_{0}, verifications_{0}, ecdh_{0}, failures_{0};
  std::atomic<uint64_t> job_derivations_{0}, job_ecdh_{0}, job_failures_{0};
};

}  // namespace nodefl::emulator
