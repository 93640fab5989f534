// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/ot/iknp.h"

#include <mbedtls/aes.h>
#include <mbedtls/platform_util.h>

#include "nodefl/core/little_endian.h"
#include "nodefl/ot/ot_hash.h"

namespace nodefl::ot {

namespace {

using Matrix = uint8_t[kBitMatrixSide][kBitMatrixRowBytes];

// G(seed, block): the block's 16-byte column of the seed's AES-CTR stream.
class ColumnPrg {
 public:
  ColumnPrg() { mbedtls_aes_init(&aes_); }
  ~ColumnPrg() { mbedtls_aes_free(&aes_); }
  ColumnPrg(const ColumnPrg&) = delete;
  ColumnPrg& operator=(const ColumnPrg&) = delete;

  Status Column(const OtKey& seed, uint64_t block, uint8_t* out) {
    uint8_t counter[16] = {};
    StoreU64Le(block, counter);
    if (mbedtls_aes_setkey_enc(&aes_, seed.bytes, 128) != 0 ||
        mbedtls_aes_crypt_ecb(&aes_, MBEDTLS_AES_ENCRYPT, counter, out) != 0) {
      return Status::Internal();
    }
    return Status::Ok();
  }

 private:
  mbedtls_aes_context aes_;
};

Status RowKey(const OtTag& tag, uint64_t index, const uint8_t* row, OtKey* key) {
  KeyHash h(HashDomain::kExtension, tag, index);
  h.Add(ConstByteSpan(row, kBitMatrixRowBytes));
  return h.FinishKey(key);
}

void Wipe(void* p, size_t n) { mbedtls_platform_zeroize(p, n); }

}  // namespace

// --- receiver ---------------------------------------------------------------

void IknpReceiver::Clear() {
  base_.Clear();
  Wipe(seed0_, sizeof(seed0_));
  Wipe(seed1_, sizeof(seed1_));
  base_done_ = 0;
  block_ = 0;
}

Status IknpReceiver::StartBase(const OtTag& tag, crypto::RandomFunction random, void* random_context,
                               ByteSpan point_out) {
  Clear();
  tag_ = tag;
  return base_.Start(tag, random, random_context, point_out);
}

Status IknpReceiver::OnBasePoints(ConstByteSpan points, size_t first) {
  if (!base_.started()) return Status::FailedPrecondition();
  if (points.size() % kOtPointBytes != 0) return Status::InvalidArgument();
  const size_t count = points.size() / kOtPointBytes;
  if (first != base_done_ || count == 0 || first + count > kIknpBaseOts) return Status::InvalidArgument();
  NODEFL_TRY(base_.Respond(points, first, Span<OtKey>(seed0_ + first, count), Span<OtKey>(seed1_ + first, count)));
  base_done_ += count;
  if (ready()) base_.Clear();  // a is no longer needed
  return Status::Ok();
}

Status IknpReceiver::ExtendBlock(ConstByteSpan choices, ByteSpan u_out, Span<OtKey> keys) {
  if (!ready()) return Status::FailedPrecondition();
  if (choices.size() != kBitMatrixRowBytes || u_out.size() < kIknpBlockBytes || keys.size() != kIknpBlockOts) {
    return Status::InvalidArgument();
  }
  ColumnPrg prg;
  Matrix t;
  for (size_t i = 0; i < kIknpBaseOts; ++i) {
    uint8_t other[kBitMatrixRowBytes];
    NODEFL_TRY(prg.Column(seed0_[i], block_, t[i]));
    NODEFL_TRY(prg.Column(seed1_[i], block_, other));
    for (size_t b = 0; b < kBitMatrixRowBytes; ++b) {
      u_out[i * kBitMatrixRowBytes + b] = static_cast<uint8_t>(t[i][b] ^ other[b] ^ choices[b]);
    }
  }
  Matrix rows;
  TransposeBitMatrix(t, rows);
  for (size_t j = 0; j < kIknpBlockOts; ++j) {
    NODEFL_TRY(RowKey(tag_, block_ * kIknpBlockOts + j, rows[j], &keys[j]));
  }
  Wipe(t, sizeof(t));
  Wipe(rows, sizeof(rows));
  ++block_;
  return Status::Ok();
}

// --- sender -----------------------------------------------------------------

void IknpSender::Clear() {
  base_.Clear();
  Wipe(s_, sizeof(s_));
  Wipe(seed_, sizeof(seed_));
  base_done_ = 0;
  block_ = 0;
}

Status IknpSender::OnBasePoint(const OtTag& tag, ConstByteSpan point, crypto::RandomFunction random,
                               void* random_context) {
  Clear();
  if (random == nullptr) return Status::InvalidArgument();
  tag_ = tag;
  if (random(random_context, s_, sizeof(s_)) != 0) return Status::Internal();
  return base_.Begin(tag, point, random, random_context);
}

Status IknpSender::WriteBasePoints(size_t first, size_t count, ByteSpan out) {
  if (!base_.begun()) return Status::FailedPrecondition();
  if (first != base_done_ || count == 0 || first + count > kIknpBaseOts || out.size() < count * kOtPointBytes) {
    return Status::InvalidArgument();
  }
  // The choices of base OTs first.. are bits first.. of s.
  uint8_t choices[kIknpBaseOts / 8] = {};
  for (size_t k = 0; k < count; ++k) SetBit(ByteSpan(choices, sizeof(choices)), k, GetBit(ConstByteSpan(s_, sizeof(s_)), first + k));
  NODEFL_TRY(base_.Choose(ConstByteSpan(choices, sizeof(choices)), first, out, Span<OtKey>(seed_ + first, count)));
  Wipe(choices, sizeof(choices));
  base_done_ += count;
  if (ready()) base_.Clear();
  return Status::Ok();
}

Status IknpSender::OnBlock(ConstByteSpan u, Span<OtKey> keys0, Span<OtKey> keys1) {
  if (!ready()) return Status::FailedPrecondition();
  if (u.size() != kIknpBlockBytes || keys0.size() != kIknpBlockOts || keys1.size() != kIknpBlockOts) {
    return Status::InvalidArgument();
  }
  ColumnPrg prg;
  Matrix q;
  const ConstByteSpan s(s_, sizeof(s_));
  for (size_t i = 0; i < kIknpBaseOts; ++i) {
    NODEFL_TRY(prg.Column(seed_[i], block_, q[i]));
    // Branch-free: mask is 0xFF when s_i = 1.
    const uint8_t mask = static_cast<uint8_t>(0u - static_cast<unsigned>(GetBit(s, i)));
    for (size_t b = 0; b < kBitMatrixRowBytes; ++b) {
      q[i][b] = static_cast<uint8_t>(q[i][b] ^ (u[i * kBitMatrixRowBytes + b] & mask));
    }
  }
  Matrix rows;
  TransposeBitMatrix(q, rows);
  for (size_t j = 0; j < kIknpBlockOts; ++j) {
    const uint64_t index = block_ * kIknpBlockOts + j;
    NODEFL_TRY(RowKey(tag_, index, rows[j], &keys0[j]));
    for (size_t b = 0; b < kBitMatrixRowBytes; ++b) rows[j][b] ^= s_[b];
    NODEFL_TRY(RowKey(tag_, index, rows[j], &keys1[j]));
  }
  Wipe(q, sizeof(q));
  Wipe(rows, sizeof(rows));
  ++block_;
  return Status::Ok();
}

}  // namespace nodefl::ot
