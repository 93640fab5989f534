// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/device/unacked_sends.h"

#include <cstring>

#include "nodefl/core/little_endian.h"

namespace nodefl::device {
namespace {

// Entry layout (unacked_sends.h): the offsets of its header fields.
constexpr size_t kIdAt = 0, kJobAt = 8, kRoundAt = 16, kDstAt = 20, kSizeAt = 24, kBodyAt = 26;

}  // namespace

static_assert(UnackedSends::kHeaderBytes == kBodyAt + 1, "the header ends with the body tag");
static_assert(nodefl_wire_Envelope_relay_send_tag <= 0xFF && nodefl_wire_Envelope_job_data_tag <= 0xFF,
              "body tags fit the header's byte");

size_t UnackedSends::EntryBytes(size_t at) const {
  return kHeaderBytes + LoadU16Le(memory_.data() + at + kSizeAt);
}

bool UnackedSends::Keep(const nodefl_wire_Envelope& message, bool sent) {
  if (!Keepable(message)) return false;
  const bool relay = message.which_body == nodefl_wire_Envelope_relay_send_tag;
  const uint64_t send_id = SendId(message);
  const size_t payload = PayloadBytes(message);
  const size_t need = kHeaderBytes + payload;
  if (!enabled() || memory_.size() - size_ < need || send_id <= last_id_) return false;
  const bool was_caught_up = cursor_ == size_;
  uint8_t* p = memory_.data() + size_;
  StoreU64Le(send_id, p + kIdAt);
  StoreU64Le(message.job_id, p + kJobAt);
  StoreU32Le(message.round, p + kRoundAt);
  StoreU32Le(relay ? message.body.relay_send.dst : message.body.job_data.kind, p + kDstAt);
  StoreU16Le(static_cast<uint16_t>(payload), p + kSizeAt);
  p[kBodyAt] = static_cast<uint8_t>(message.which_body);
  std::memcpy(p + kHeaderBytes, relay ? message.body.relay_send.sealed.bytes : message.body.job_data.data.bytes,
              payload);
  size_ += need;
  ++count_;
  last_id_ = send_id;
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
  out->which_body = p[kBodyAt];
  out->job_id = LoadU64Le(p + kJobAt);
  out->round = LoadU32Le(p + kRoundAt);
  const uint16_t size = LoadU16Le(p + kSizeAt);
  if (out->which_body == nodefl_wire_Envelope_relay_send_tag) {
    nodefl_wire_RelaySend& send = out->body.relay_send;
    send.send_id = LoadU64Le(p + kIdAt);
    send.dst = LoadU32Le(p + kDstAt);
    std::memcpy(send.sealed.bytes, p + kHeaderBytes, size);
    send.sealed.size = size;
  } else {
    nodefl_wire_JobData& data = out->body.job_data;
    data.send_id = LoadU64Le(p + kIdAt);
    data.kind = LoadU32Le(p + kDstAt);
    std::memcpy(data.data.bytes, p + kHeaderBytes, size);
    data.data.size = size;
  }
  cursor_ += kHeaderBytes + size;
}

}  // namespace nodefl::device
