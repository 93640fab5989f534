// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/job_keys.h"

#include <mbedtls/ecdh.h>
#include <mbedtls/ecp.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

#include <cstring>

#include "nodefl/crypto/ec_scratch.h"

namespace nodefl::seal {
namespace {

constexpr char kLabel[] = "nodefl job keys v2";
constexpr size_t kLabelBytes = sizeof(kLabel) - 1;
constexpr size_t kScalarBytes = 32;

void StoreLe(uint64_t v, size_t bytes, uint8_t* out) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

using crypto::EcScratch;

}  // namespace

void JobKeyPair::Wipe() {
  mbedtls_platform_zeroize(private_key_, sizeof(private_key_));
  mbedtls_platform_zeroize(public_key_, sizeof(public_key_));
  mbedtls_platform_zeroize(salt_, sizeof(salt_));
  salt_size_ = 0;
  job_id_ = 0;
  valid_ = false;
}

Status JobKeyPair::Generate(uint64_t job_id, ConstByteSpan salt, crypto::RandomFunction random,
                            void* random_context) {
  Wipe();
  if (random == nullptr || salt.size() < kMinJobSaltBytes || salt.size() > kMaxJobSaltBytes) {
    return Status::InvalidArgument();
  }
  EcScratch s;
  if (mbedtls_ecp_group_load(&s.group, MBEDTLS_ECP_DP_SECP256R1) != 0) return Status::ResourceExhausted();
  if (mbedtls_ecp_gen_keypair(&s.group, &s.scalar, &s.point, random, random_context) != 0) {
    return Status::Unavailable();
  }
  size_t written = 0;
  if (mbedtls_mpi_write_binary(&s.scalar, private_key_, sizeof(private_key_)) != 0 ||
      mbedtls_ecp_point_write_binary(&s.group, &s.point, MBEDTLS_ECP_PF_UNCOMPRESSED, &written, public_key_,
                                     sizeof(public_key_)) != 0 ||
      written != kJobPublicKeyBytes) {
    Wipe();
    return Status::Internal();
  }
  std::memcpy(salt_, salt.data(), salt.size());
  salt_size_ = salt.size();
  job_id_ = job_id;
  valid_ = true;
  return Status::Ok();
}

Status DeriveJobKeys(const PairKeys& pair, const JobKeyPair& own, uint32_t own_id, ConstByteSpan peer_job_key,
                     crypto::RandomFunction random, void* random_context, PairKeys* out) {
  if (out == nullptr || random == nullptr || !pair.valid || !own.valid() ||
      (own_id != pair.low_id && own_id != pair.high_id)) {
    return Status::InvalidArgument();
  }
  if (peer_job_key.size() != kJobPublicKeyBytes) return Status::Unauthenticated();

  EcScratch s;
  if (mbedtls_ecp_group_load(&s.group, MBEDTLS_ECP_DP_SECP256R1) != 0) return Status::ResourceExhausted();
  if (mbedtls_ecp_point_read_binary(&s.group, &s.point, peer_job_key.data(), peer_job_key.size()) != 0 ||
      mbedtls_ecp_check_pubkey(&s.group, &s.point) != 0) {
    return Status::Unauthenticated();
  }
  if (mbedtls_mpi_read_binary(&s.scalar, own.private_key_, kScalarBytes) != 0 ||
      mbedtls_ecdh_compute_shared(&s.group, &s.shared, &s.point, &s.scalar, random, random_context) != 0) {
    return Status::Internal();
  }

  uint8_t ikm[2 * kSealKeyBytes + kScalarBytes];
  std::memcpy(ikm, pair.low_to_high, kSealKeyBytes);
  std::memcpy(ikm + kSealKeyBytes, pair.high_to_low, kSealKeyBytes);
  int rc = mbedtls_mpi_write_binary(&s.shared, ikm + 2 * kSealKeyBytes, kScalarBytes);

  // Both ephemeral keys in a fixed (low, high) order, so both devices hash
  // the same info whichever of them derives.
  const bool own_is_low = own_id == pair.low_id;
  const uint8_t* low_key = own_is_low ? own.public_key_ : peer_job_key.data();
  const uint8_t* high_key = own_is_low ? peer_job_key.data() : own.public_key_;
  uint8_t info[kLabelBytes + 8 + 4 + 4 + 2 * kJobPublicKeyBytes];
  std::memcpy(info, kLabel, kLabelBytes);
  StoreLe(own.job_id(), 8, info + kLabelBytes);
  StoreLe(pair.low_id, 4, info + kLabelBytes + 8);
  StoreLe(pair.high_id, 4, info + kLabelBytes + 12);
  std::memcpy(info + kLabelBytes + 16, low_key, kJobPublicKeyBytes);
  std::memcpy(info + kLabelBytes + 16 + kJobPublicKeyBytes, high_key, kJobPublicKeyBytes);

  uint8_t okm[2 * kSealKeyBytes];
  if (rc == 0) {
    const ConstByteSpan salt = own.salt();
    rc = mbedtls_hkdf(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), salt.data(), salt.size(), ikm, sizeof(ikm),
                      info, sizeof(info), okm, sizeof(okm));
  }
  mbedtls_platform_zeroize(ikm, sizeof(ikm));
  if (rc != 0) {
    mbedtls_platform_zeroize(okm, sizeof(okm));
    return Status::Internal();
  }
  out->Assign(pair.low_id, pair.high_id, okm);
  mbedtls_platform_zeroize(okm, sizeof(okm));
  return Status::Ok();
}

}  // namespace nodefl::seal
