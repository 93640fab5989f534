// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// IKNP OT extension (Ishai, Kilian, Nissim, Petrank 2003), semi-honest:
// 128 base OTs once per pair and run, then any number of OTs for the cost
// of symmetric crypto, so public-key work does not grow with the batch.
//
// SEMI-HONEST ONLY: this is IKNP without the consistency check of Keller,
// Orsini and Scholl ("Actively Secure OT Extension with Optimal Overhead",
// CRYPTO 2015, KOS15). Nothing checks that the receiver used one choice
// vector r in all 128 columns of u. A receiver that flips r in a column i
// of its choice makes the sender's keys of that OT depend on s_i; whether
// the keys are then still usable (a selective failure, visible in how the
// protocol built on the OTs goes on) tells it s_i, and once it knows s it
// has BOTH keys of every OT (q_j ^ s). So the sender's secrets are safe only
// from a receiver that follows the protocol. The receiver's choices stay
// hidden even from a deviating sender (u is masked by G(k1_i), and the
// sender holds only one seed of each pair). Where a peer may deviate, use
// base OTs or add the KOS15 check.
//
// Roles are reversed for the base OTs: the extension receiver (who chooses)
// is the base-OT sender with seed pairs (k0_i, k1_i), i < 128; the
// extension sender is the base-OT receiver with a random 128-bit s and
// seeds k_i^{s_i}. Then, per block of 128 OTs with choice bits r:
//   receiver: t^i = G(k0_i, block), u^i = t^i ^ G(k1_i, block) ^ r  -- u -->
//   sender:   q^i = G(k_i^{s_i}, block) ^ s_i * u^i  (= t^i ^ s_i * r)
// Transposing gives rows q_j = t_j ^ r_j * s; the keys are
//   sender key0_j = H(j, q_j), key1_j = H(j, q_j ^ s); receiver key = H(j, t_j)
// with H = KeyHash(kExtension, tag, j) and j the OT's index in the run. G
// is AES-128 (MbedTLS) in counter mode keyed by the seed: one 16-byte
// column per block. u (2,048 bytes per block) is the only traffic.
//
// State: the seeds (4 KiB receiver, 2 KiB sender) and a block counter; no
// heap. Blocks must be processed in the same order on both sides.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/ot/base_ot.h"
#include "nodefl/ot/bit_matrix.h"
#include "nodefl/ot/ot_key.h"

namespace nodefl::ot {

inline constexpr size_t kIknpBaseOts = 128;
inline constexpr size_t kIknpBlockOts = 128;
inline constexpr size_t kIknpBlockBytes = kIknpBaseOts * kIknpBlockOts / 8;  // u of one block

// The extension receiver: chooses; base-OT sender.
class IknpReceiver {
 public:
  IknpReceiver() = default;
  ~IknpReceiver() { Clear(); }
  IknpReceiver(const IknpReceiver&) = delete;
  IknpReceiver& operator=(const IknpReceiver&) = delete;

  // Base phase, step 1: writes the base-OT point A (kOtPointBytes).
  Status StartBase(const OtTag& tag, crypto::RandomFunction random, void* random_context, ByteSpan point_out);
  // Base phase, step 2: the sender's base-OT points for base OTs
  // first .. first + count - 1, in order (any split into calls).
  Status OnBasePoints(ConstByteSpan points, size_t first);
  bool ready() const { return base_done_ == kIknpBaseOts; }

  // One block: `choices` (16 bytes, bit j = choice of OT j of the block)
  // -> `u_out` (kIknpBlockBytes, to send) and the 128 chosen keys.
  Status ExtendBlock(ConstByteSpan choices, ByteSpan u_out, Span<OtKey> keys);
  uint64_t blocks() const { return block_; }
  void Clear();

 private:
  BaseOtSender base_;
  OtTag tag_;
  OtKey seed0_[kIknpBaseOts];
  OtKey seed1_[kIknpBaseOts];
  size_t base_done_ = 0;
  uint64_t block_ = 0;
};

// The extension sender: gets both keys of every OT; base-OT receiver.
class IknpSender {
 public:
  IknpSender() = default;
  ~IknpSender() { Clear(); }
  IknpSender(const IknpSender&) = delete;
  IknpSender& operator=(const IknpSender&) = delete;

  // Base phase: the receiver's point A; draws s.
  Status OnBasePoint(const OtTag& tag, ConstByteSpan point, crypto::RandomFunction random, void* random_context);
  // Writes the base-OT points for base OTs first .. first + count - 1
  // (count * kOtPointBytes bytes); call in order until all 128 are written.
  Status WriteBasePoints(size_t first, size_t count, ByteSpan out);
  bool ready() const { return base_done_ == kIknpBaseOts; }

  // One block: the receiver's u (kIknpBlockBytes) -> 128 key pairs.
  Status OnBlock(ConstByteSpan u, Span<OtKey> keys0, Span<OtKey> keys1);
  uint64_t blocks() const { return block_; }
  void Clear();

 private:
  BaseOtReceiver base_;
  OtTag tag_;
  uint8_t s_[kIknpBaseOts / 8] = {};
  OtKey seed_[kIknpBaseOts];
  size_t base_done_ = 0;
  uint64_t block_ = 0;
};

}  // namespace nodefl::ot
