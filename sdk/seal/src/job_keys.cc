// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/seal/job_keys.h"

#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

#include <cstring>

namespace nodefl::seal {
namespace {

void StoreLe(uint64_t v, size_t bytes, uint8_t* out) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

Status DeriveJobKeys(const PairKeys& pair, ConstByteSpan job_salt, uint64_t job_id, PairKeys* out) {
  if (out == nullptr || !pair.valid || job_salt.size() < kMinJobSaltBytes) {
    return Status::InvalidArgument();
  }
  static constexpr char kLabel[] = "nodefl job keys v1";
  constexpr size_t kLabelBytes = sizeof(kLabel) - 1;
  uint8_t info[kLabelBytes + 8 + 4 + 4];
  std::memcpy(info, kLabel, kLabelBytes);
  StoreLe(job_id, 8, info + kLabelBytes);
  StoreLe(pair.low_id, 4, info + kLabelBytes + 8);
  StoreLe(pair.high_id, 4, info + kLabelBytes + 12);

  uint8_t ikm[2 * kSealKeyBytes];
  std::memcpy(ikm, pair.low_to_high, kSealKeyBytes);
  std::memcpy(ikm + kSealKeyBytes, pair.high_to_low, kSealKeyBytes);
  uint8_t okm[2 * kSealKeyBytes];
  const int rc = mbedtls_hkdf(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), job_salt.data(),
                              job_salt.size(), ikm, sizeof(ikm), info, sizeof(info), okm, sizeof(okm));
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
