// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PairKeySource: where a role gets the pair keys for a peer whose
// certificate the relay delivered, and that pair's keys for a job. The
// defaults are VerifyAndDerivePairKeys, which checks the certificate
// (VerifyPeerCertificate) and runs static-static ECDH (DerivePairKeys):
// three P-256 scalar multiplications, and DeriveJobKeys (job_keys.h): one
// more per peer and job. They are by far the largest cost of the key
// rounds on the device.
//
// The hooks exist for hosts that run many devices in one process (the
// emulator, server/emulator/include/nodefl/emulator/shared_pair_keys.h):
// pair keys and job keys are symmetric (both devices of a pair derive the
// same ones) and a certificate that one emulated device verified need not
// be verified again by the next, so such a host may remember them across
// its devices. A source must return exactly what the default would, or its
// error; a real device has no reason to install one.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::seal {

// VerifyPeerCertificate(own, certificate_der, peer_id) then
// DerivePairKeys; their errors unchanged. `out` is written only on success.
Status VerifyAndDerivePairKeys(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id,
                               uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                               PairKeys* out);

struct PairKeySource {
  using DeriveFunction = Status (*)(void* context, const tls::TlsCredentials& own,
                                    ConstByteSpan certificate_der, uint32_t own_id, uint32_t peer_id,
                                    crypto::RandomFunction random, void* random_context, PairKeys* out);
  using DeriveJobFunction = Status (*)(void* context, const PairKeys& pair, const JobKeyPair& own,
                                       uint32_t own_id, ConstByteSpan peer_job_key, crypto::RandomFunction random,
                                       void* random_context, PairKeys* out);
  DeriveFunction derive = nullptr;         // nullptr: VerifyAndDerivePairKeys
  DeriveJobFunction derive_job = nullptr;  // nullptr: DeriveJobKeys
  void* context = nullptr;

  Status Derive(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id, uint32_t peer_id,
                crypto::RandomFunction random, void* random_context, PairKeys* out) const {
    if (derive == nullptr) {
      return VerifyAndDerivePairKeys(own, certificate_der, own_id, peer_id, random, random_context, out);
    }
    return derive(context, own, certificate_der, own_id, peer_id, random, random_context, out);
  }

  Status DeriveJob(const PairKeys& pair, const JobKeyPair& own, uint32_t own_id, ConstByteSpan peer_job_key,
                   crypto::RandomFunction random, void* random_context, PairKeys* out) const {
    if (derive_job == nullptr) return DeriveJobKeys(pair, own, own_id, peer_job_key, random, random_context, out);
    return derive_job(context, pair, own, own_id, peer_job_key, random, random_context, out);
  }
};

}  // namespace nodefl::seal
