// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/round_keys.h"

#include <mbedtls/ecdh.h>
#include <mbedtls/ecp.h>
#include <mbedtls/platform_util.h>

#include <cstring>

#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/ec_scratch.h"
#include "nodefl/crypto/sha256.h"

namespace nodefl::secagg {
namespace {

constexpr char kLabel[] = "nodefl secagg pair seed v1";
constexpr size_t kLabelBytes = sizeof(kLabel) - 1;

using crypto::EcScratch;

}  // namespace

void RoundKeyPair::Wipe() {
  mbedtls_platform_zeroize(secret_, sizeof(secret_));
  mbedtls_platform_zeroize(public_key_, sizeof(public_key_));
  valid_ = false;
}

Status RoundKeyPair::Generate(crypto::RandomFunction random, void* random_context) {
  Wipe();
  if (random == nullptr) return Status::InvalidArgument();
  EcScratch s;
  if (mbedtls_ecp_group_load(&s.group, MBEDTLS_ECP_DP_SECP256R1) != 0) return Status::ResourceExhausted();
  if (mbedtls_ecp_gen_keypair(&s.group, &s.scalar, &s.point, random, random_context) != 0) {
    return Status::Unavailable();
  }
  size_t written = 0;
  if (mbedtls_mpi_write_binary(&s.scalar, secret_, sizeof(secret_)) != 0 ||
      mbedtls_ecp_point_write_binary(&s.group, &s.point, MBEDTLS_ECP_PF_UNCOMPRESSED, &written, public_key_,
                                     sizeof(public_key_)) != 0 ||
      written != kRoundPublicKeyBytes) {
    Wipe();
    return Status::Internal();
  }
  valid_ = true;
  return Status::Ok();
}

Status RoundKeyPair::FromSecret(ConstByteSpan secret) {
  Wipe();
  if (secret.size() != kRoundSecretBytes) return Status::InvalidArgument();
  EcScratch s;
  if (mbedtls_ecp_group_load(&s.group, MBEDTLS_ECP_DP_SECP256R1) != 0) return Status::ResourceExhausted();
  if (mbedtls_mpi_read_binary(&s.scalar, secret.data(), secret.size()) != 0 ||
      mbedtls_ecp_check_privkey(&s.group, &s.scalar) != 0) {
    return Status::InvalidArgument();
  }
  // The public key is G times the secret: no blinding needed for a key the
  // caller already holds in the clear.
  size_t written = 0;
  if (mbedtls_ecp_mul(&s.group, &s.point, &s.scalar, &s.group.G, nullptr, nullptr) != 0 ||
      mbedtls_ecp_point_write_binary(&s.group, &s.point, MBEDTLS_ECP_PF_UNCOMPRESSED, &written, public_key_,
                                     sizeof(public_key_)) != 0 ||
      written != kRoundPublicKeyBytes) {
    Wipe();
    return Status::Internal();
  }
  std::memcpy(secret_, secret.data(), kRoundSecretBytes);
  valid_ = true;
  return Status::Ok();
}

Status PairMaskSeed(const RoundKeyPair& own, uint32_t own_id, ConstByteSpan peer_public, uint32_t peer_id,
                    uint64_t round, crypto::RandomFunction random, void* random_context, MaskSeed* out) {
  if (out == nullptr || !own.valid() || random == nullptr || own_id == peer_id) return Status::InvalidArgument();
  if (peer_public.size() != kRoundPublicKeyBytes) return Status::Unauthenticated();
  EcScratch s;
  if (mbedtls_ecp_group_load(&s.group, MBEDTLS_ECP_DP_SECP256R1) != 0) return Status::ResourceExhausted();
  if (mbedtls_ecp_point_read_binary(&s.group, &s.point, peer_public.data(), peer_public.size()) != 0 ||
      mbedtls_ecp_check_pubkey(&s.group, &s.point) != 0) {
    return Status::Unauthenticated();
  }
  uint8_t input[kLabelBytes + 8 + 4 + 4 + kRoundSecretBytes];
  std::memcpy(input, kLabel, kLabelBytes);
  StoreU64Le(round, input + kLabelBytes);
  StoreU32Le(own_id < peer_id ? own_id : peer_id, input + kLabelBytes + 8);
  StoreU32Le(own_id < peer_id ? peer_id : own_id, input + kLabelBytes + 12);
  const ConstByteSpan secret = own.secret();
  Status status = Status::Ok();
  if (mbedtls_mpi_read_binary(&s.scalar, secret.data(), secret.size()) != 0 ||
      mbedtls_ecdh_compute_shared(&s.group, &s.shared, &s.point, &s.scalar, random, random_context) != 0 ||
      mbedtls_mpi_write_binary(&s.shared, input + kLabelBytes + 16, kRoundSecretBytes) != 0) {
    status = Status::Internal();
  }
  if (status.ok()) {
    mbedtls_sha256_context sha;
    mbedtls_sha256_init(&sha);
    if (crypto::sha256::Starts(&sha) != 0 || crypto::sha256::Update(&sha, input, sizeof(input)) != 0 ||
        crypto::sha256::Finish(&sha, out->bytes) != 0) {
      status = Status::Internal();
    }
    mbedtls_sha256_free(&sha);
  }
  mbedtls_platform_zeroize(input, sizeof(input));
  return status;
}

}  // namespace nodefl::secagg
