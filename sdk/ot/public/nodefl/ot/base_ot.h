// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Base oblivious transfers from public-key operations: the "simplest OT" of
// Chou and Orlandi (2015) on P-256, every group operation done by MbedTLS
// (mbedtls_ecp_mul, mbedtls_ecp_muladd), semi-honest security.
//
//   sender:   a random, A = a*G                               --- A --->
//   receiver: per OT i with choice c_i: b_i random,
//             B_i = b_i*G + c_i*A, key_i = H(i, A, B_i, b_i*A) <-- B_i ---
//   sender:   key0_i = H(i, A, B_i, a*B_i),
//             key1_i = H(i, A, B_i, a*B_i - a*A)
//
// B_i is a uniformly random point whatever c_i is, so the sender learns
// nothing about the choice; the receiver cannot compute the other key
// without solving CDH. H is KeyHash(kBaseOt, tag, i). A sender's `a` may
// serve any number of OTs of one run (indices must differ).
//
// The receiver's choice never steers a branch: both b*G and b*G + A are
// computed and one is taken with mbedtls_mpi_safe_cond_assign. Scalar
// multiplications by secrets use mbedtls_ecp_mul with blinding (`random`);
// mbedtls_ecp_muladd is used only with the public scalars 1 and -1.
//
// Cost per OT: sender one scalar multiplication, receiver two; 65 bytes
// (an uncompressed point) each way per OT plus one point for the run.
// Heap: inside MbedTLS (bignums), none here.
#pragma once

#include <mbedtls/ecp.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/ot/ot_key.h"
#include "nodefl/tls/rng.h"

namespace nodefl::ot {

inline constexpr size_t kOtPointBytes = 65;  // SEC1 uncompressed P-256 point

class BaseOtSender {
 public:
  BaseOtSender();
  ~BaseOtSender();
  BaseOtSender(const BaseOtSender&) = delete;
  BaseOtSender& operator=(const BaseOtSender&) = delete;

  // Draws a; writes A (kOtPointBytes) to `point_out`. kInvalidArgument if
  // `point_out` is too small or `random` is null; kInternal if MbedTLS
  // fails.
  Status Start(const OtTag& tag, tls::RandomFunction random, void* random_context, ByteSpan point_out);

  // The receiver's points for OTs first_index, first_index + 1, ...:
  // `points` holds keys0.size() points back to back. kFailedPrecondition
  // before Start; kInvalidArgument for sizes that do not match;
  // kUnauthenticated for a point that is not on the curve.
  Status Respond(ConstByteSpan points, uint64_t first_index, Span<OtKey> keys0, Span<OtKey> keys1);

  bool started() const { return started_; }
  // Forgets a (wiped); Start again for a new run.
  void Clear();

 private:
  mbedtls_ecp_group group_;
  mbedtls_mpi a_;
  mbedtls_ecp_point a_times_a_;  // a*A
  OtTag tag_;
  uint8_t a_point_[kOtPointBytes] = {};
  tls::RandomFunction random_ = nullptr;
  void* random_context_ = nullptr;
  bool started_ = false;
};

class BaseOtReceiver {
 public:
  BaseOtReceiver();
  ~BaseOtReceiver();
  BaseOtReceiver(const BaseOtReceiver&) = delete;
  BaseOtReceiver& operator=(const BaseOtReceiver&) = delete;

  // Takes the sender's A. kUnauthenticated if it is not a point of the
  // curve (or is the identity); kInvalidArgument for a wrong size.
  Status Begin(const OtTag& tag, ConstByteSpan sender_point, tls::RandomFunction random, void* random_context);

  // OTs first_index .. first_index + keys.size() - 1 with choice bits
  // `choices` (bit k for the k-th of them): writes the points to send
  // (keys.size() * kOtPointBytes into `points_out`) and the chosen keys.
  Status Choose(ConstByteSpan choices, uint64_t first_index, ByteSpan points_out, Span<OtKey> keys);

  bool begun() const { return begun_; }
  void Clear();

 private:
  mbedtls_ecp_group group_;
  mbedtls_ecp_point a_;  // the sender's A
  OtTag tag_;
  uint8_t a_point_[kOtPointBytes] = {};
  tls::RandomFunction random_ = nullptr;
  void* random_context_ = nullptr;
  bool begun_ = false;
};

}  // namespace nodefl::ot
