// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// WalkQueue: the walks a device holds in the FedWalk walk job (walk_role.h),
// in a fixed number of slots of caller memory. A walk stays in a slot from
// the moment it reaches the device until the message that carries it on
// (RelaySend to the next device, or its JobData result) is handed to the
// session. A slot holds either
//   kSealed   a sealed walk message from a device whose key is not there
//             yet (opened in arrival order once it is: `seq`),
//   kForward  a walk after its step, to be sealed to `peer` (when its key
//             is there and the session has room),
//   kResult   a walk that ends here, to be sent to the server.
// In the last two the slot's bytes are the walk message (12-byte header,
// kept current in `header`, then the ids), so a walk is sealed from, and
// its result encoded in, the slot itself.
//
// Memory: sizeof(WalkSlot) (24 bytes) per slot plus WalkSlotBytes(l) bytes
// per slot (36 + 4 l: the walk message plus the seal overhead).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/seal/seal.h"

namespace nodefl::fedwalk {

// Bytes a slot needs for walks of length l (sealed or open).
constexpr size_t WalkSlotBytes(uint32_t length) {
  return WalkMessageBytes(length) + seal::kSealOverheadBytes;
}

enum class SlotState : uint8_t { kFree, kSealed, kForward, kResult };

struct WalkSlot {
  SlotState state = SlotState::kFree;
  WalkOutcome outcome = WalkOutcome::kComplete;  // kResult
  uint16_t sealed_bytes = 0;                     // kSealed
  uint32_t peer = 0;                             // kSealed: sender; kForward: next device
  uint32_t seq = 0;                              // arrival order
  WalkHeader header;                             // kForward, kResult
};

class WalkQueue {
 public:
  // Uses min(slots.size(), memory.size() / slot_bytes, limit) slots of
  // slot_bytes each, all free. Returns that number.
  size_t Bind(Span<WalkSlot> slots, ByteSpan memory, size_t slot_bytes, size_t limit);

  // A free slot, now in `state` (not kFree) with the next seq; nullptr
  // when all are in use.
  WalkSlot* Acquire(SlotState state);
  void Release(WalkSlot* slot);

  ByteSpan Bytes(const WalkSlot* slot) const;
  // The walk's ids: the bytes after the header (capacity (slot_bytes - 12) / 4).
  ByteSpan Ids(const WalkSlot* slot) const { return Bytes(slot).subspan(kWalkMessageHeaderBytes); }

  size_t capacity() const { return capacity_; }
  size_t in_use() const { return in_use_; }
  size_t slot_bytes() const { return slot_bytes_; }
  WalkSlot& at(size_t i) { return slots_[i]; }

 private:
  Span<WalkSlot> slots_;
  ByteSpan memory_;
  size_t slot_bytes_ = 0;
  size_t capacity_ = 0;
  size_t in_use_ = 0;
  uint32_t next_seq_ = 0;
};

}  // namespace nodefl::fedwalk
