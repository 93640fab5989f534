// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/device/unacked_sends.h"

#include <cstring>

namespace nodefl::device {
namespace {

// Entries are copied field by field: the span has no alignment promise.
template <typename T>
void Put(uint8_t*& p, T value) {
  std::memcpy(p, &value, sizeof(T));
  p += sizeof(T);
}
template <typename T>
T Get(const uint8_t*& p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  p += sizeof(T);
  return value;
}

uint64_t IdAt(const uint8_t* entry) {
  uint64_t id;
  std::memcpy(&id, entry, sizeof(id));
  return id;
}

}  // namespace

size_t UnackedSends::EntryBytes(size_t at) const {
  uint16_t sealed;
  std::memcpy(&sealed, memory_.data() + at + kHeaderBytes - sizeof(uint16_t), sizeof(sealed));
  return kHeaderBytes + sealed;
}

bool UnackedSends::Keep(const nodefl_wire_Envelope& message, bool sent) {
  const nodefl_wire_RelaySend& send = message.body.relay_send;
  const size_t need = kHeaderBytes + send.sealed.size;
  if (!enabled() || memory_.size() - size_ < need || send.send_id <= last_id_) return false;
  const bool was_caught_up = cursor_ == size_;
  uint8_t* p = memory_.data() + size_;
  Put<uint64_t>(p, send.send_id);
  Put<uint64_t>(p, message.job_id);
  Put<uint32_t>(p, message.round);
  Put<uint32_t>(p, send.dst);
  Put<uint16_t>(p, static_cast<uint16_t>(send.sealed.size));
  std::memcpy(p, send.sealed.bytes, send.sealed.size);
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
  while (drop < size_ && IdAt(memory_.data() + drop) <= acked) {
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
  send.send_id = Get<uint64_t>(p);
  out->job_id = Get<uint64_t>(p);
  out->round = Get<uint32_t>(p);
  send.dst = Get<uint32_t>(p);
  const uint16_t sealed = Get<uint16_t>(p);
  std::memcpy(send.sealed.bytes, p, sealed);
  send.sealed.size = sealed;
  cursor_ += kHeaderBytes + sealed;
}

}  // namespace nodefl::device
