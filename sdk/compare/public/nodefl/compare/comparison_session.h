// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ComparisonSession: one party of a batch of secure comparisons with one
// peer, sans-IO. Party A holds x_0..x_{n-1}, party B holds y_0..y_{n-1};
// comparison i computes [x_i > y_i] and [x_i = y_i]. With `reveal` both
// parties learn both bits; without it each keeps an XOR share (share(i)),
// for composing further protocols (AND of comparisons, maximum finding).
//
// Protocol (semi-honest; docs/secure-comparison.md): per digit a
// 1-out-of-2^w OT from A's table of masked [x_d > v], [x_d = v] for every
// v, built from w random OTs (sdk/ot: base OTs per comparison, or IKNP
// extension for batches); then a tree of Beaver ANDs with triples from
// random OTs; then, with `reveal`, both send their output shares with a tag
// binding the whole transcript.
//
// Use: Start(), then repeatedly NextMessage() until it returns 0 bytes,
// send what it wrote; feed every message of the peer to OnMessage(). The
// run ends in kDone or kAborted, never with a wrong result:
//   * any message that is not exactly the next one the schedule allows
//     (type, sequence, range, size) aborts; so does a kAbort from the peer;
//   * an output tag that does not match this party's own view of the
//     transcript (both directions) aborts: a message changed on its way
//     is caught by both parties when the result is revealed; without
//     reveal, integrity rests on the transport (sealed relay messages);
//   * Abort() (the caller's deadline, a lost peer) aborts and queues one
//     kAbort for the peer.
// The party that sends the last output message cannot know whether it
// arrived; a coordinator treats a run as done only when both parties say so
// (server/compare).
//
// Memory: the caller's ComparisonSlot per comparison and, on party A, the
// tables (plan.table_bytes() per comparison); the session itself holds the
// OT state (about 16 KiB with IKNP). No heap outside MbedTLS's bignums.
#pragma once

#include <mbedtls/aes.h>
#include <mbedtls/sha256.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/compare/comparison_plan.h"
#include "nodefl/compare/comparison_schedule.h"
#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/ot/base_ot.h"
#include "nodefl/ot/iknp.h"
#include "nodefl/ot/ot_key.h"

namespace nodefl::compare {

struct ComparisonSlot {
  uint32_t value = 0;
  uint32_t gt = 0;      // shares of the current level's nodes, bit = node
  uint32_t eq = 0;
  uint64_t a = 0;       // Beaver triple shares, bit = AND index
  uint64_t b = 0;
  uint64_t c = 0;
  uint64_t open_d = 0;  // own Beaver openings, bit = AND index
  uint64_t open_f = 0;
  uint64_t pads = 0;    // party B: table mask of each digit (2 bits per digit)
  uint8_t result = 0;   // bit 0: gt, bit 1: eq (shares, or the revealed result)
};

struct ComparisonStorage {
  Span<ComparisonSlot> slots;
  ByteSpan tables;  // party A only
};

class ComparisonSession {
 public:
  enum class State : uint8_t { kIdle, kRunning, kDone, kAborted };

  struct Counters {
    uint64_t bytes_sent = 0;
    uint64_t bytes_received = 0;
    uint32_t messages_sent = 0;
    uint32_t messages_received = 0;
  };

  ComparisonSession();  // storage comes later (SetStorage)
  explicit ComparisonSession(const ComparisonStorage& storage);
  ~ComparisonSession();
  ComparisonSession(const ComparisonSession&) = delete;
  ComparisonSession& operator=(const ComparisonSession&) = delete;

  // Replaces the storage; not while running (kFailedPrecondition).
  Status SetStorage(const ComparisonStorage& storage);

  // kInvalidArgument for a bad shape (CheckShape), values.size() !=
  // shape.count, a value above plan.MaxValue(), storage too small, or a
  // null `random` (which draws OT secrets, table masks and triple choices).
  Status Start(Role role, const RunShape& shape, const ot::OtTag& tag, Span<const uint32_t> values,
               crypto::RandomFunction random, void* random_context);

  // Writes the next message into `out` (at least shape.max_message_bytes)
  // and returns its size; 0 when nothing is due now. In kAborted, writes
  // one kAbort if this party aborted on its own.
  Result<size_t> NextMessage(ByteSpan out);
  // A message from the peer. An error means the run is now aborted (the
  // status says why); after the end, messages are ignored (kOk) except that
  // they are not processed.
  Status OnMessage(ConstByteSpan message);
  void Abort(Status reason);

  State state() const { return state_; }
  Status abort_reason() const { return abort_reason_; }
  bool done() const { return state_ == State::kDone; }
  // Valid in kDone with reveal: [x_i > y_i], [x_i = y_i].
  bool greater(size_t i) const { return (slots_[i].result & 1u) != 0; }
  bool equal(size_t i) const { return (slots_[i].result & 2u) != 0; }
  // Valid in kDone without reveal: this party's XOR shares (bit 0 gt, bit 1 eq).
  uint8_t share(size_t i) const { return slots_[i].result; }
  const Counters& counters() const { return counters_; }
  const RunShape& shape() const { return shape_; }

 private:
  bool is_a() const { return role_ == Role::kA; }
  bool Ready(const MessageSpec& spec) const;
  Status Write(const MessageSpec& spec, uint8_t* payload);
  Status Receive(const MessageSpec& spec, const uint8_t* payload);
  Status Fail(Status reason);

  // OT results, in OT order.
  Status SenderOt(uint64_t g, const ot::OtKey& k0, const ot::OtKey& k1);
  Status ReceiverOt(uint64_t g, bool choice, const ot::OtKey& key);
  Status ChoiceBits(uint64_t first_ot, uint32_t count, uint8_t* bits);
  // Bits [first_bit, first_bit + bits) of the table-mask stream of `key`,
  // whole 16-byte blocks.
  Status MaskStream(const ot::OtKey& key, uint32_t first_bit, uint32_t bits, uint8_t* out);
  // B's mask of its own entry y from the keys in digit_keys0_.
  Status ReceiverPad(uint32_t y, uint32_t w, uint8_t* pad);
  Status BuildTable(uint32_t i, uint32_t d);

  void LevelComplete();  // computes the next level's openings
  void ComputeOpenings(ComparisonSlot& s, uint32_t level) const;
  void ApplyOpenings(ComparisonSlot& s, uint32_t level, uint64_t peer_d, uint64_t peer_f) const;
  // H(sequence, digest of the output sender's messages, digest of the
  // messages it received, shares).
  Status OutputTag(uint32_t sequence, const uint8_t* by_sender, const uint8_t* to_sender, const uint8_t* shares,
                   size_t n, uint8_t* tag) const;
  void DigestOf(mbedtls_sha256_context* context, uint8_t* out) const;

  Span<ComparisonSlot> slots_;
  ByteSpan tables_;
  State state_ = State::kIdle;
  Status abort_reason_;
  bool abort_notice_due_ = false;
  Role role_ = Role::kA;
  RunShape shape_;
  ot::OtTag tag_;
  crypto::RandomFunction random_ = nullptr;
  void* random_context_ = nullptr;
  Schedule own_;
  Schedule peer_;
  uint32_t levels_ready_ = 0;     // levels whose shares are complete (level 0 counts as 1)
  uint32_t level_progress_ = 0;   // comparisons done in the level being completed
  uint64_t ots_done_ = 0;
  bool iknp_base_begun_ = false;  // party A, IKNP: B's base-OT point arrived
  uint32_t outputs_received_ = 0;
  ot::OtKey digit_keys0_[kMaxDigitBits];
  ot::OtKey digit_keys1_[kMaxDigitBits];
  ot::BaseOtSender base_sender_;
  ot::BaseOtReceiver base_receiver_;
  ot::IknpSender iknp_sender_;
  ot::IknpReceiver iknp_receiver_;
  ot::OtKey keys0_[ot::kIknpBlockOts];
  ot::OtKey keys1_[ot::kIknpBlockOts];
  mbedtls_aes_context aes_;  // table-mask streams
  mbedtls_sha256_context sent_digest_;
  mbedtls_sha256_context received_digest_;
  Counters counters_;
};

}  // namespace nodefl::compare
