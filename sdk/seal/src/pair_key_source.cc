// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/pair_key_source.h"

#include "nodefl/seal/peer_certificate.h"

namespace nodefl::seal {

Status VerifyAndDerivePairKeys(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id,
                               uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                               PairKeys* out) {
  PeerPublicKey public_key;
  NODEFL_TRY(VerifyPeerCertificate(own, certificate_der, peer_id, &public_key));
  return DerivePairKeys(own, public_key, own_id, peer_id, random, random_context, out);
}

}  // namespace nodefl::seal
