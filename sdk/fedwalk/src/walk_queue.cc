// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/walk_queue.h"

#include "nodefl/core/assert.h"

namespace nodefl::fedwalk {

size_t WalkQueue::Bind(Span<WalkSlot> slots, ByteSpan memory, size_t slot_bytes, size_t limit) {
  slots_ = slots;
  memory_ = memory;
  slot_bytes_ = slot_bytes;
  size_t n = slots.size();
  if (slot_bytes == 0) n = 0;
  if (slot_bytes != 0 && memory.size() / slot_bytes < n) n = memory.size() / slot_bytes;
  if (limit < n) n = limit;
  capacity_ = n;
  in_use_ = 0;
  next_seq_ = 0;
  for (WalkSlot& s : slots_) s = WalkSlot{};
  return capacity_;
}

WalkSlot* WalkQueue::Acquire(SlotState state) {
  NODEFL_CHECK(state != SlotState::kFree);
  if (in_use_ == capacity_) return nullptr;
  for (size_t i = 0; i < capacity_; ++i) {
    WalkSlot& s = slots_[i];
    if (s.state != SlotState::kFree) continue;
    s = WalkSlot{};
    s.state = state;
    s.seq = ++next_seq_;
    ++in_use_;
    return &s;
  }
  return nullptr;
}

void WalkQueue::Release(WalkSlot* slot) {
  NODEFL_CHECK(slot->state != SlotState::kFree && in_use_ > 0);
  *slot = WalkSlot{};
  --in_use_;
}

ByteSpan WalkQueue::Bytes(const WalkSlot* slot) const {
  const size_t index = static_cast<size_t>(slot - slots_.data());
  NODEFL_CHECK(index < capacity_);
  return memory_.subspan(index * slot_bytes_, slot_bytes_);
}

}  // namespace nodefl::fedwalk
