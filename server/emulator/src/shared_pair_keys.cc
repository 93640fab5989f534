// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/emulator/shared_pair_keys.h"

#include <algorithm>

namespace nodefl::emulator {

SharedPairKeys::Counters SharedPairKeys::counters() const {
  return Counters{derivations_.load(), verifications_.load(), ecdh_.load(), failures_.load()};
}

Status SharedPairKeys::Thunk(void* self, const tls::TlsCredentials& own, ConstByteSpan certificate_der,
                             uint32_t own_id, uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                             seal::PairKeys* out) {
  return static_cast<SharedPairKeys*>(self)->Derive(own, certificate_der, own_id, peer_id, random, random_context,
                                                    out);
}

Status SharedPairKeys::PublicKeyOf(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t peer_id,
                                   seal::PeerPublicKey* out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = verified_.find(peer_id);
    if (it != verified_.end() && it->second.certificate_der.size() == certificate_der.size() &&
        std::equal(certificate_der.begin(), certificate_der.end(), it->second.certificate_der.begin())) {
      *out = it->second.public_key;
      return Status::Ok();
    }
  }
  // Checked outside the lock: the other threads' devices go on meanwhile.
  ++verifications_;
  seal::PeerPublicKey key;
  NODEFL_TRY(seal::VerifyPeerCertificate(own, certificate_der, peer_id, &key));
  std::lock_guard<std::mutex> lock(mutex_);
  Verified& v = verified_[peer_id];
  v.certificate_der.assign(certificate_der.begin(), certificate_der.end());
  v.public_key = key;
  *out = key;
  return Status::Ok();
}

Status SharedPairKeys::Derive(const tls::TlsCredentials& own, ConstByteSpan certificate_der, uint32_t own_id,
                              uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                              seal::PairKeys* out) {
  ++derivations_;
  seal::PeerPublicKey key;
  if (Status st = PublicKeyOf(own, certificate_der, peer_id, &key); !st.ok()) {
    ++failures_;
    return st;
  }
  const uint64_t low = std::min(own_id, peer_id), high = std::max(own_id, peer_id);
  const uint64_t pair = low << 32 | high;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = pairs_.find(pair);
    if (it != pairs_.end()) {
      *out = it->second;
      return Status::Ok();
    }
  }
  ++ecdh_;
  seal::PairKeys keys;
  if (Status st = seal::DerivePairKeys(own, key, own_id, peer_id, random, random_context, &keys); !st.ok()) {
    ++failures_;
    return st;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pairs_.emplace(pair, keys);
  *out = keys;
  return Status::Ok();
}

}  // namespace nodefl::emulator
