// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/device/unacked_sends.h"

#include <cstring>

#include "nodefl/core/little_endian.h"

namespace nodefl::device {
namespace {

// Entry layout (unacked_sends.h): the offsets of its header fields.
constexpr size_t kIdAt = 0, kJobAt = 8, kRoundAt = 16, kDstAt = 20, kSizeAt = 24;

}  // namespace

static_assert(UnackedSends::kHeaderBytes == kSizeAt + 2, "the header ends with the sealed size");

size_t UnackedSends::EntryBytes(size_t at) const {
  return kHeaderBytes + LoadU16Le(memory_.data() + at + kSizeAt);
}

bool UnackedSends::Keep(const nodefl_wire_Envelope& message, bool sent) {
  const nodefl_wire_RelaySend& send = message.body.relay_send;
  const size_t need = kHeaderBytes + send.sealed.size;
  if (!enabled() || memory_.size() - size_ < need || send.send_id <= last_id_) return false;
  const bool was_caught_up = cursor_ == size_;
  uint8_t* p = memory_.data() + size_;
  StoreU64Le(send.send_id, p + kIdAt);
  StoreU64Le(message.job_id, p + kJobAt);
  StoreU32Le(message.round, p + kRoundAt);
  StoreU32Le(send.dst, p + kDstAt);
  StoreU16Le(static_cast<uint16_t>(send.sealed.size), p + kSizeAt);
  std::memcpy(p + kHeaderBytes, send.sealed.bytes, send.sealed.size);
  size_ += need;
  ++count_;
  last_id_ = send.send_id;
  // Written now only if nothing older still waits: the server must see
  // send ids in order.
  if (sent && was_caught_up) cursor_ = size_;
  return true;
}

size_t UnackedSends::Release(uint64_t acked) {
  size_t drop = 0, released = 0;
  while (drop < size_ && LoadU64Le(memory_.data() + drop + kIdAt) <= acked) {
    drop += EntryBytes(drop);
    ++released;
  }
  if (drop == 0) return 0;
  std::memmove(memory_.data(), memory_.data() + drop, size_ - drop);
  size_ -= drop;
  count_ -= released;
  cursor_ = cursor_ > drop ? cursor_ - drop : 0;
  previous_cursor_ = cursor_;
  return released;
}

size_t UnackedSends::Clear() {
  const size_t dropped = count_;
  size_ = cursor_ = previous_cursor_ = count_ = 0;
  return dropped;
}

void UnackedSends::NextResend(nodefl_wire_Envelope* out) {
  previous_cursor_ = cursor_;
  const uint8_t* p = memory_.data() + cursor_;
  std::memset(out, 0, sizeof(*out));
  out->which_body = nodefl_wire_Envelope_relay_send_tag;
  nodefl_wire_RelaySend& send = out->body.relay_send;
  send.send_id = LoadU64Le(p + kIdAt);
  out->job_id = LoadU64Le(p + kJobAt);
  out->round = LoadU32Le(p + kRoundAt);
  send.dst = LoadU32Le(p + kDstAt);
  const uint16_t sealed = LoadU16Le(p + kSizeAt);
  std::memcpy(send.sealed.bytes, p + kHeaderBytes, sealed);
  send.sealed.size = sealed;
  cursor_ += kHeaderBytes + sealed;
}

}  // namespace nodefl::device
