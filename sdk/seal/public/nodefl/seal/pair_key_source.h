// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PairKeySource: where a role gets the pair keys for a peer whose
// certificate the relay delivered. The default, VerifyAndDerivePairKeys,
// checks the certificate (VerifyPeerCertificate) and runs static-static
// ECDH (DerivePairKeys): three P-256 scalar multiplications, by far the
// largest cost of a FedWalk walk job on the device.
//
// The hook exists for hosts that run many devices in one process (the
// emulator, server/emulator/src/shared_pair_keys.h): pair keys are symmetric
// (both devices of a pair derive the same ones) and a certificate that one
// emulated device verified need not be verified again by the next, so such a
// host may remember them across its devices. A source must return exactly
// what VerifyAndDerivePairKeys would, or its error; a real device has no
// reason to install one.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
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
  DeriveFunction derive = nullptr;  // nullptr: VerifyAndDerivePairKeys
  void* context = nullptr;

  Status Derive(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id, uint32_t peer_id,
                crypto::RandomFunction random, void* random_context, PairKeys* out) const {
    if (derive == nullptr) {
      return VerifyAndDerivePairKeys(own, certificate_der, own_id, peer_id, random, random_context, out);
    }
    return derive(context, own, certificate_der, own_id, peer_id, random, random_context, out);
  }
};

}  // namespace nodefl::seal
