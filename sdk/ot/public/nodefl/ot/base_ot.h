// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Base oblivious transfers from public-key operations: the "simplest OT" of
// Chou and Orlandi (2015) on P-256, every group operation done by MbedTLS
// 2.28, semi-honest security.
//
//   sender:   a random, A = a*G                               --- A --->
//   receiver: per OT i with choice c_i: b_i random,
//             B_i = b_i*G + c_i*A, key_i = H(i, A, B_i, b_i*A) <-- B_i ---
//   sender:   key0_i = H(i, A, B_i, a*B_i),
//             key1_i = H(i, A, B_i, a*(B_i - A))
//
// B_i is a uniformly random point whatever c_i is, so the sender learns
// nothing about the choice; the receiver cannot compute the other key
// without solving CDH. H is KeyHash(kBaseOt, tag, i). A sender's `a` may
// serve any number of OTs of one run (indices must differ).
//
// Timing. MbedTLS documents mbedtls_ecp_mul as running the same sequence of
// field operations for every scalar, and with an RNG it randomises the
// projective coordinates of its intermediate points (which also hides the
// output's value from the final normalisation); its time may still depend
// on the base point. mbedtls_ecp_muladd gives no such promise: the point
// addition and the normalisation of its result branch and reduce
// differently for different coordinates. So here:
//
//   1. Every secret scalar (a, b_i, b_i^-1) goes only through
//      mbedtls_ecp_mul with an RNG, on a base point whose timing cannot
//      carry a secret (below).
//   2. mbedtls_ecp_muladd adds two points (scalars 1 and -1 only, which it
//      copies or negates without multiplying) and only where neither input
//      nor the sum can tell a timing observer anything secret.
//
// The sender (secrets: a, and whatever a*B and a*(B - A) would reveal):
// the former a*B - a*A added two SECRET points. Now it adds B and -A, both
// public (A is what it sent, B what it received), so the addition's inputs
// and output are all known to everyone; then a*B and a*(B - A) are two
// blinded multiplications of public base points.
//
// The receiver (secret: c; b is fresh and B is public). The textbook b*G + A
// cannot be done by an addition: given the public B, the point b*G is B
// (c = 0) or B - A (c = 1), so the sender can predict the addition's inputs
// under each hypothesis and compare its timing with both predictions. The
// receiver instead computes, with b uniform on [1, n):
//      t = b^-1 * A            (blinded multiplication; b^-1 by a blinded
//                               inversion, see InvertBlinded in the .cc)
//      r = G + t               (the one addition)
//      p = b * G,  q = b * r   (= b*G + A; both ALWAYS computed)
//      B = q if c else p       (mbedtls_mpi_safe_cond_assign, no branch)
//      key point b * A         (blinded multiplication, public base)
// Why nothing here depends on c by timing:
//   * The four multiplications (b^-1 * A, b * G, b * r, b * A) run for
//     both values of c with the same scalars and base points; only the
//     selection, which is constant time, depends on c.
//   * The one addition's inputs are the public G and t = b^-1 * A, and t
//     (hence r) is the only point whose value the timing can depend on.
//     t is uniformly random whatever c is. Relating it to what the sender
//     sees requires b^-1 * G from the point b*G (= B or B - A, one per
//     hypothesis): the sender knows a, so t = a * (b^-1 * G), and b*G to
//     b^-1*G is the inverse Diffie-Hellman problem, as hard as CDH. So
//     partial information about t from timing could be tested against the
//     two hypotheses only by solving it; we assume (as for the hardness of
//     DH bits in general) that timing leaks of t do not help.
//   * The multiplication q = b * r has the secret base point r, so its
//     table precomputation may leak r by timing: the same argument as for t.
//   * Outputs p and q are normalised from randomised coordinates (above);
//     the selected one is B, which is public anyway.
//
// Cost per OT: sender two scalar multiplications, receiver four and a
// blinded inversion (before this timing argument: one and two); 65 bytes
// (an uncompressed point) from the receiver per OT, plus the sender's one
// point per run. Heap: inside MbedTLS (bignums), none here.
#pragma once

#include <mbedtls/ecp.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/ot/ot_key.h"

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
  Status Start(const OtTag& tag, crypto::RandomFunction random, void* random_context, ByteSpan point_out);

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
  mbedtls_ecp_point a_pub_;  // A = a*G
  OtTag tag_;
  uint8_t a_point_[kOtPointBytes] = {};
  crypto::RandomFunction random_ = nullptr;
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
  Status Begin(const OtTag& tag, ConstByteSpan sender_point, crypto::RandomFunction random, void* random_context);

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
  crypto::RandomFunction random_ = nullptr;
  void* random_context_ = nullptr;
  bool begun_ = false;
};

}  // namespace nodefl::ot
