// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/pair_keys.h"

#include <mbedtls/ecdh.h>
#include <mbedtls/ecp.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

#include <cstring>

#include "nodefl/crypto/sha256.h"
#include "nodefl/tls/device_identity.h"

namespace nodefl::seal {
namespace {

constexpr char kSalt[] = "nodefl/seal/v1";
constexpr char kInfoLabel[] = "nodefl seal pair keys";
constexpr size_t kSharedSecretBytes = 32;

void StoreBe32(uint32_t value, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (24 - 8 * i));
}

// Owns the MbedTLS objects of one ECDH computation; freeing them also
// zeroes their limbs (mbedtls_mpi_free wipes before releasing).
class EcdhScratch {
 public:
  EcdhScratch() {
    mbedtls_ecp_group_init(&group);
    mbedtls_ecp_point_init(&peer_point);
    mbedtls_mpi_init(&shared);
  }
  ~EcdhScratch() {
    mbedtls_mpi_free(&shared);
    mbedtls_ecp_point_free(&peer_point);
    mbedtls_ecp_group_free(&group);
  }
  EcdhScratch(const EcdhScratch&) = delete;
  EcdhScratch& operator=(const EcdhScratch&) = delete;

  mbedtls_ecp_group group;
  mbedtls_ecp_point peer_point;
  mbedtls_mpi shared;
};

// kSealKeyIdBytes of SHA-256(label || key). SHA-256 over memory cannot
// fail in MbedTLS's software implementation; if it did, the id would be
// zero and messages sealed under the key would simply not be recognised.
void KeyId(const uint8_t* key, uint8_t* id) {
  static constexpr char kLabel[] = "nodefl seal key id v1";
  uint8_t digest[32];
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  if (crypto::sha256::Starts(&ctx) != 0 ||
      crypto::sha256::Update(&ctx, reinterpret_cast<const uint8_t*>(kLabel), sizeof(kLabel) - 1) != 0 ||
      crypto::sha256::Update(&ctx, key, kSealKeyBytes) != 0 || crypto::sha256::Finish(&ctx, digest) != 0) {
    std::memset(digest, 0, sizeof(digest));
  }
  mbedtls_sha256_free(&ctx);
  std::memcpy(id, digest, kSealKeyIdBytes);
  mbedtls_platform_zeroize(digest, sizeof(digest));
}

}  // namespace

void PairKeys::Wipe() {
  mbedtls_platform_zeroize(low_to_high, sizeof(low_to_high));
  mbedtls_platform_zeroize(high_to_low, sizeof(high_to_low));
  mbedtls_platform_zeroize(low_to_high_id, sizeof(low_to_high_id));
  mbedtls_platform_zeroize(high_to_low_id, sizeof(high_to_low_id));
  low_id = high_id = 0;
  valid = false;
}

Status DerivePairKeys(const tls::TlsCredentials& own, const PeerPublicKey& peer, uint32_t own_id,
                      uint32_t peer_id, crypto::RandomFunction random, void* random_context,
                      PairKeys* out) {
  if (out == nullptr || random == nullptr) return Status::InvalidArgument();
  if (!own.has_own_identity()) return Status::FailedPrecondition();
  if (!peer.valid || peer.device_id != peer_id || own_id == peer_id) {
    return Status::InvalidArgument();
  }
  // Deriving under the wrong own id would give keys the peer never derives;
  // catch the misconfiguration here rather than as undecryptable messages.
  const Result<uint32_t> certified_id = tls::DeviceIdFromCertificate(*own.own_certificate());
  if (!certified_id.ok() || *certified_id != own_id) return Status::InvalidArgument();

  // A private group copy: the key's own group object is shared read-only
  // (credentials may be used by several threads).
  EcdhScratch scratch;
  if (mbedtls_ecp_group_load(&scratch.group, MBEDTLS_ECP_DP_SECP256R1) != 0) {
    return Status::ResourceExhausted();
  }
  if (mbedtls_ecp_point_read_binary(&scratch.group, &scratch.peer_point, peer.point,
                                    sizeof(peer.point)) != 0 ||
      mbedtls_ecp_check_pubkey(&scratch.group, &scratch.peer_point) != 0) {
    return Status::Unauthenticated();
  }
  const mbedtls_ecp_keypair* own_key = mbedtls_pk_ec(*own.own_key());
  if (mbedtls_ecdh_compute_shared(&scratch.group, &scratch.shared, &scratch.peer_point,
                                  &own_key->d, random, random_context) != 0) {
    return Status::Internal();
  }

  uint8_t secret[kSharedSecretBytes];
  uint8_t info[sizeof(kInfoLabel) - 1 + 8];
  uint8_t okm[2 * kSealKeyBytes];
  const uint32_t low = own_id < peer_id ? own_id : peer_id;
  const uint32_t high = own_id < peer_id ? peer_id : own_id;
  std::memcpy(info, kInfoLabel, sizeof(kInfoLabel) - 1);
  StoreBe32(low, info + sizeof(kInfoLabel) - 1);
  StoreBe32(high, info + sizeof(kInfoLabel) + 3);

  int rc = mbedtls_mpi_write_binary(&scratch.shared, secret, sizeof(secret));
  if (rc == 0) {
    rc = mbedtls_hkdf(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256),
                      reinterpret_cast<const unsigned char*>(kSalt), sizeof(kSalt) - 1, secret,
                      sizeof(secret), info, sizeof(info), okm, sizeof(okm));
  }
  mbedtls_platform_zeroize(secret, sizeof(secret));
  if (rc != 0) {
    mbedtls_platform_zeroize(okm, sizeof(okm));
    return Status::Internal();
  }
  out->Assign(low, high, okm);
  mbedtls_platform_zeroize(okm, sizeof(okm));
  return Status::Ok();
}

void PairKeys::Assign(uint32_t low, uint32_t high, const uint8_t (&okm)[2 * kSealKeyBytes]) {
  Wipe();
  low_id = low;
  high_id = high;
  std::memcpy(low_to_high, okm, kSealKeyBytes);
  std::memcpy(high_to_low, okm + kSealKeyBytes, kSealKeyBytes);
  KeyId(low_to_high, low_to_high_id);
  KeyId(high_to_low, high_to_low_id);
  valid = true;
}

}  // namespace nodefl::seal
