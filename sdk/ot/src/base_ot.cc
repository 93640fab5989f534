// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/ot/base_ot.h"

#include <mbedtls/bignum.h>
#include <mbedtls/platform_util.h>

#include "nodefl/ot/ot_hash.h"

namespace nodefl::ot {

namespace {

// Owns the temporaries of one OT so that every path frees them (and wipes
// the scalars: mbedtls_mpi_free zeroes the limbs).
struct PointScratch {
  PointScratch() {
    mbedtls_ecp_point_init(&p);
    mbedtls_ecp_point_init(&q);
    mbedtls_ecp_point_init(&r);
    mbedtls_ecp_point_init(&t);
    mbedtls_mpi_init(&scalar);
    mbedtls_mpi_init(&inverse);
    mbedtls_mpi_init(&blind);
    mbedtls_mpi_init(&one);
    mbedtls_mpi_init(&minus_one);
  }
  ~PointScratch() {
    mbedtls_ecp_point_free(&p);
    mbedtls_ecp_point_free(&q);
    mbedtls_ecp_point_free(&r);
    mbedtls_ecp_point_free(&t);
    mbedtls_mpi_free(&scalar);
    mbedtls_mpi_free(&inverse);
    mbedtls_mpi_free(&blind);
    mbedtls_mpi_free(&one);
    mbedtls_mpi_free(&minus_one);
  }
  PointScratch(const PointScratch&) = delete;
  PointScratch& operator=(const PointScratch&) = delete;
  mbedtls_ecp_point p, q, r, t;
  mbedtls_mpi scalar, inverse, blind, one, minus_one;
};

// k^-1 mod n without running mbedtls_mpi_inv_mod (a binary extended GCD,
// variable time) on k: it inverts k*s for a fresh random s, which is
// uniform and independent of k, then multiplies by s again. MbedTLS's own
// ECDSA signing blinds its nonce inversion the same way.
int InvertBlinded(mbedtls_ecp_group& group, const mbedtls_mpi& k, mbedtls_mpi* inverse, mbedtls_mpi* blind,
                  crypto::RandomFunction random, void* random_context) {
  int rc = mbedtls_ecp_gen_privkey(&group, blind, random, random_context);
  if (rc == 0) rc = mbedtls_mpi_mul_mpi(inverse, &k, blind);
  if (rc == 0) rc = mbedtls_mpi_mod_mpi(inverse, inverse, &group.N);
  if (rc == 0) rc = mbedtls_mpi_inv_mod(inverse, inverse, &group.N);
  if (rc == 0) rc = mbedtls_mpi_mul_mpi(inverse, inverse, blind);
  if (rc == 0) rc = mbedtls_mpi_mod_mpi(inverse, inverse, &group.N);
  return rc;
}

Status WritePoint(const mbedtls_ecp_group& group, const mbedtls_ecp_point& point, uint8_t* out) {
  size_t written = 0;
  if (mbedtls_ecp_point_write_binary(&group, &point, MBEDTLS_ECP_PF_UNCOMPRESSED, &written, out, kOtPointBytes) !=
          0 ||
      written != kOtPointBytes) {
    return Status::Internal();
  }
  return Status::Ok();
}

// A peer's point: on the curve and not the identity.
Status ReadPoint(const mbedtls_ecp_group& group, const uint8_t* in, mbedtls_ecp_point* point) {
  if (in[0] != 0x04) return Status::Unauthenticated();
  if (mbedtls_ecp_point_read_binary(&group, point, in, kOtPointBytes) != 0) return Status::Unauthenticated();
  if (mbedtls_ecp_check_pubkey(&group, point) != 0) return Status::Unauthenticated();
  return Status::Ok();
}

Status Key(const OtTag& tag, uint64_t index, const uint8_t* a_point, const uint8_t* b_point,
           const mbedtls_ecp_group& group, const mbedtls_ecp_point& shared, OtKey* key) {
  uint8_t shared_bytes[kOtPointBytes];
  NODEFL_TRY(WritePoint(group, shared, shared_bytes));
  KeyHash h(HashDomain::kBaseOt, tag, index);
  h.Add(ConstByteSpan(a_point, kOtPointBytes));
  h.Add(ConstByteSpan(b_point, kOtPointBytes));
  h.Add(ConstByteSpan(shared_bytes, kOtPointBytes));
  mbedtls_platform_zeroize(shared_bytes, sizeof(shared_bytes));
  return h.FinishKey(key);
}

}  // namespace

BaseOtSender::BaseOtSender() {
  mbedtls_ecp_group_init(&group_);
  mbedtls_mpi_init(&a_);
  mbedtls_ecp_point_init(&a_pub_);
}

BaseOtSender::~BaseOtSender() {
  Clear();
  mbedtls_ecp_group_free(&group_);
  mbedtls_mpi_free(&a_);
  mbedtls_ecp_point_free(&a_pub_);
}

void BaseOtSender::Clear() {
  // mbedtls_mpi_free wipes the limbs.
  mbedtls_mpi_free(&a_);
  mbedtls_mpi_init(&a_);
  mbedtls_ecp_point_free(&a_pub_);
  mbedtls_ecp_point_init(&a_pub_);
  started_ = false;
}

Status BaseOtSender::Start(const OtTag& tag, crypto::RandomFunction random, void* random_context, ByteSpan point_out) {
  if (random == nullptr || point_out.size() < kOtPointBytes) return Status::InvalidArgument();
  Clear();
  if (group_.id != MBEDTLS_ECP_DP_SECP256R1 && mbedtls_ecp_group_load(&group_, MBEDTLS_ECP_DP_SECP256R1) != 0) {
    return Status::Internal();
  }
  if (mbedtls_ecp_gen_privkey(&group_, &a_, random, random_context) != 0 ||
      mbedtls_ecp_mul(&group_, &a_pub_, &a_, &group_.G, random, random_context) != 0) {
    Clear();
    return Status::Internal();
  }
  NODEFL_TRY(WritePoint(group_, a_pub_, a_point_));
  for (size_t i = 0; i < kOtPointBytes; ++i) point_out[i] = a_point_[i];
  tag_ = tag;
  random_ = random;
  random_context_ = random_context;
  started_ = true;
  return Status::Ok();
}

Status BaseOtSender::Respond(ConstByteSpan points, uint64_t first_index, Span<OtKey> keys0, Span<OtKey> keys1) {
  if (!started_) return Status::FailedPrecondition();
  if (keys0.size() != keys1.size() || points.size() != keys0.size() * kOtPointBytes) {
    return Status::InvalidArgument();
  }
  PointScratch s;
  if (mbedtls_mpi_lset(&s.one, 1) != 0 || mbedtls_mpi_lset(&s.minus_one, -1) != 0) return Status::Internal();
  for (size_t i = 0; i < keys0.size(); ++i) {
    const uint8_t* b_point = points.data() + i * kOtPointBytes;
    NODEFL_TRY(ReadPoint(group_, b_point, &s.p));
    // B = A would make B - A the identity; an honest receiver sends it with
    // probability 2^-256. Public data, so the branch reveals nothing.
    if (mbedtls_ecp_point_cmp(&s.p, &a_pub_) == 0) return Status::Unauthenticated();
    // q = B - A from the two public points (the only addition here), then
    // a*B and a*(B - A), each a blinded scalar multiplication.
    if (mbedtls_ecp_muladd(&group_, &s.q, &s.one, &s.p, &s.minus_one, &a_pub_) != 0 ||
        mbedtls_ecp_mul(&group_, &s.r, &a_, &s.p, random_, random_context_) != 0 ||
        mbedtls_ecp_mul(&group_, &s.t, &a_, &s.q, random_, random_context_) != 0) {
      return Status::Internal();
    }
    const uint64_t index = first_index + i;
    NODEFL_TRY(Key(tag_, index, a_point_, b_point, group_, s.r, &keys0[i]));
    NODEFL_TRY(Key(tag_, index, a_point_, b_point, group_, s.t, &keys1[i]));
  }
  return Status::Ok();
}

BaseOtReceiver::BaseOtReceiver() {
  mbedtls_ecp_group_init(&group_);
  mbedtls_ecp_point_init(&a_);
}

BaseOtReceiver::~BaseOtReceiver() {
  mbedtls_ecp_group_free(&group_);
  mbedtls_ecp_point_free(&a_);
}

void BaseOtReceiver::Clear() { begun_ = false; }

Status BaseOtReceiver::Begin(const OtTag& tag, ConstByteSpan sender_point, crypto::RandomFunction random,
                             void* random_context) {
  begun_ = false;
  if (random == nullptr || sender_point.size() != kOtPointBytes) return Status::InvalidArgument();
  if (group_.id != MBEDTLS_ECP_DP_SECP256R1 && mbedtls_ecp_group_load(&group_, MBEDTLS_ECP_DP_SECP256R1) != 0) {
    return Status::Internal();
  }
  NODEFL_TRY(ReadPoint(group_, sender_point.data(), &a_));
  for (size_t i = 0; i < kOtPointBytes; ++i) a_point_[i] = sender_point[i];
  tag_ = tag;
  random_ = random;
  random_context_ = random_context;
  begun_ = true;
  return Status::Ok();
}

Status BaseOtReceiver::Choose(ConstByteSpan choices, uint64_t first_index, ByteSpan points_out, Span<OtKey> keys) {
  if (!begun_) return Status::FailedPrecondition();
  if (choices.size() < BitBytes(keys.size()) || points_out.size() < keys.size() * kOtPointBytes) {
    return Status::InvalidArgument();
  }
  PointScratch s;
  if (mbedtls_mpi_lset(&s.one, 1) != 0) return Status::Internal();
  for (size_t i = 0; i < keys.size(); ++i) {
    const unsigned char choice = GetBit(choices, i) ? 1 : 0;
    // b random; t = b^-1 A; r = G + t; p = b G; q = b r = b G + A; then
    // p <- q iff the choice is 1 (no branch on it); key point b A. Both
    // candidates are always computed, and the one addition adds the public
    // G to t, which nobody can relate to B (base_ot.h).
    if (mbedtls_ecp_gen_privkey(&group_, &s.scalar, random_, random_context_) != 0 ||
        InvertBlinded(group_, s.scalar, &s.inverse, &s.blind, random_, random_context_) != 0 ||
        mbedtls_ecp_mul(&group_, &s.t, &s.inverse, &a_, random_, random_context_) != 0 ||
        mbedtls_ecp_muladd(&group_, &s.r, &s.one, &group_.G, &s.one, &s.t) != 0 ||
        mbedtls_ecp_mul(&group_, &s.p, &s.scalar, &group_.G, random_, random_context_) != 0 ||
        mbedtls_ecp_mul(&group_, &s.q, &s.scalar, &s.r, random_, random_context_) != 0 ||
        mbedtls_mpi_safe_cond_assign(&s.p.X, &s.q.X, choice) != 0 ||
        mbedtls_mpi_safe_cond_assign(&s.p.Y, &s.q.Y, choice) != 0 ||
        mbedtls_mpi_safe_cond_assign(&s.p.Z, &s.q.Z, choice) != 0 ||
        mbedtls_ecp_mul(&group_, &s.r, &s.scalar, &a_, random_, random_context_) != 0) {
      return Status::Internal();
    }
    uint8_t* b_point = points_out.data() + i * kOtPointBytes;
    NODEFL_TRY(WritePoint(group_, s.p, b_point));
    NODEFL_TRY(Key(tag_, first_index + i, a_point_, b_point, group_, s.r, &keys[i]));
  }
  return Status::Ok();
}

}  // namespace nodefl::ot
