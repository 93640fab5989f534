// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/emulator/shared_pair_keys.h"

#include <algorithm>
#include <cstring>

namespace nodefl::emulator {

namespace {

// The index of the pair {a, b} in pairs_ and jobs_, whichever end asks.
uint64_t PairIndex(uint32_t a, uint32_t b) {
  return static_cast<uint64_t>(std::min(a, b)) << 32 | std::max(a, b);
}

bool SameBytes(const std::vector<uint8_t>& stored, ConstByteSpan bytes) {
  return stored.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), stored.begin());
}

bool SamePairKeys(const seal::PairKeys& a, const seal::PairKeys& b) {
  return a.valid && b.valid && a.low_id == b.low_id && a.high_id == b.high_id &&
         std::memcmp(a.low_to_high, b.low_to_high, sizeof(a.low_to_high)) == 0 &&
         std::memcmp(a.high_to_low, b.high_to_low, sizeof(a.high_to_low)) == 0;
}

}  // namespace

SharedPairKeys::Counters SharedPairKeys::counters() const {
  return Counters{derivations_.load(),     verifications_.load(), ecdh_.load(),        failures_.load(),
                  job_derivations_.load(), job_ecdh_.load(),      job_failures_.load()};
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
  const uint64_t pair = PairIndex(own_id, peer_id);
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

Status SharedPairKeys::JobThunk(void* self, const seal::PairKeys& pair, const seal::JobKeyPair& own, uint32_t own_id,
                                ConstByteSpan peer_job_key, crypto::RandomFunction random, void* random_context,
                                seal::PairKeys* out) {
  return static_cast<SharedPairKeys*>(self)->DeriveJob(pair, own, own_id, peer_job_key, random, random_context, out);
}

bool SharedPairKeys::Matches(const JobEntry& entry, const seal::PairKeys& pair, const seal::JobKeyPair& own,
                             ConstByteSpan low_job_key, ConstByteSpan high_job_key) {
  return entry.job_id == own.job_id() && SameBytes(entry.salt, own.salt()) && SamePairKeys(entry.pair_keys, pair) &&
         SameBytes(entry.low_job_key, low_job_key) && SameBytes(entry.high_job_key, high_job_key);
}

Status SharedPairKeys::DeriveJob(const seal::PairKeys& pair, const seal::JobKeyPair& own, uint32_t own_id,
                                 ConstByteSpan peer_job_key, crypto::RandomFunction random, void* random_context,
                                 seal::PairKeys* out) {
  ++job_derivations_;
  // Only a well-formed request can match an entry (its own key is valid and
  // the peer's key has the right size); anything else goes to DeriveJobKeys
  // for its exact error.
  const bool usable = pair.valid && own.valid() && (own_id == pair.low_id || own_id == pair.high_id) &&
                      peer_job_key.size() == seal::kJobPublicKeyBytes;
  const uint64_t key = PairIndex(pair.low_id, pair.high_id);
  const bool own_is_low = own_id == pair.low_id;
  const ConstByteSpan low_job_key = own_is_low ? own.public_key() : peer_job_key;
  const ConstByteSpan high_job_key = own_is_low ? peer_job_key : own.public_key();
  if (usable) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = jobs_.find(key);
    // The entry's ephemeral keys are the two devices' own public keys, each
    // the multiple of its private key that JobKeyPair::Generate made; the
    // ECDH of either private key with the other's public key is the same
    // point, so the other side's result is this side's.
    if (it != jobs_.end() && Matches(it->second, pair, own, low_job_key, high_job_key)) {
      *out = it->second.job_keys;
      jobs_.erase(it);
      return Status::Ok();
    }
  }
  ++job_ecdh_;
  seal::PairKeys keys;
  if (Status st = seal::DeriveJobKeys(pair, own, own_id, peer_job_key, random, random_context, &keys); !st.ok()) {
    ++job_failures_;
    return st;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  JobEntry& entry = jobs_[key];  // replaces an entry from an earlier job or key
  entry.job_id = own.job_id();
  entry.salt.assign(own.salt().begin(), own.salt().end());
  entry.low_job_key.assign(low_job_key.begin(), low_job_key.end());
  entry.high_job_key.assign(high_job_key.begin(), high_job_key.end());
  entry.pair_keys = pair;
  entry.job_keys = keys;
  *out = keys;
  return Status::Ok();
}

}  // namespace nodefl::emulator
