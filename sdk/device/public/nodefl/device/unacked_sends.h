// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// UnackedSends: the device's copy of each numbered send (a RelaySend to
// another device, or a JobData record for the server) until the server
// acknowledges it (RelaySendAck, or Welcome.last_relay_send_id on a resumed
// session), so that what a broken connection swallowed is sent again on
// the next one (docs/protocol.md, "Kept sends").
//
// Memory is the caller's: entries sit back to back in one byte span, oldest
// first, each a fixed header (send id, job id, round, destination or record
// kind, size, which message) then the payload. An acknowledgement releases
// entries from the front; a resend walks them from the front with a
// cursor. A span smaller than one largest entry disables keeping (every
// send goes out unnumbered, as in protocol v1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::device {

class UnackedSends {
 public:
  // send_id u64, job_id u64, round u32, dst (RelaySend) or kind (JobData)
  // u32, payload size u16, message u8 (its envelope body tag).
  static constexpr size_t kHeaderBytes = 8 + 8 + 4 + 4 + 2 + 1;
  static constexpr size_t kMaxPayloadBytes =
      protocol::kMaxSealedBytes > protocol::kMaxJobDataBytes ? protocol::kMaxSealedBytes : protocol::kMaxJobDataBytes;
  static constexpr size_t kMaxEntryBytes = kHeaderBytes + kMaxPayloadBytes;

  explicit UnackedSends(Span<uint8_t> memory) : memory_(memory) {}

  bool enabled() const { return memory_.size() >= kMaxEntryBytes; }
  // Room for a largest entry (what a role may be about to send).
  bool has_room() const { return enabled() && memory_.size() - size_ >= kMaxEntryBytes; }
  // Whether `message` is one that can be kept: a RelaySend or a JobData.
  static bool Keepable(const nodefl_wire_Envelope& message) {
    return message.which_body == nodefl_wire_Envelope_relay_send_tag ||
           message.which_body == nodefl_wire_Envelope_job_data_tag;
  }
  // Room for this message's entry (a keepable one).
  bool Fits(const nodefl_wire_Envelope& message) const {
    return enabled() && memory_.size() - size_ >= kHeaderBytes + PayloadBytes(message);
  }
  // The send id field of a keepable message.
  static uint64_t& SendId(nodefl_wire_Envelope& message) {
    return message.which_body == nodefl_wire_Envelope_relay_send_tag ? message.body.relay_send.send_id
                                                                      : message.body.job_data.send_id;
  }
  static uint64_t SendId(const nodefl_wire_Envelope& message) {
    return message.which_body == nodefl_wire_Envelope_relay_send_tag ? message.body.relay_send.send_id
                                                                      : message.body.job_data.send_id;
  }
  // Entries not yet written on the current connection (after Rewind()).
  bool resend_pending() const { return cursor_ < size_; }
  size_t count() const { return count_; }
  size_t bytes() const { return size_; }
  uint64_t last_id() const { return last_id_; }

  // Keeps a copy of `message` (a keepable one whose send_id is set, above
  // any kept before). `sent`: it was written on the current connection; else it
  // waits for NextResend(). False when there is no room for it.
  bool Keep(const nodefl_wire_Envelope& message, bool sent);

  // Forgets every entry with send_id <= `acked`; returns how many.
  size_t Release(uint64_t acked);
  // Forgets everything (the server started a fresh session); returns how many.
  size_t Clear();

  // A new connection: every entry still kept is to be written again.
  void Rewind() { cursor_ = 0; }
  // The next entry to write again, as the envelope it was kept from
  // (version and seq left for the session to fill); advances the cursor.
  // Only when resend_pending().
  void NextResend(nodefl_wire_Envelope* out);
  // Steps back over the entry NextResend() returned (it could not be
  // written: no room in the output).
  void UndoResend() { cursor_ = previous_cursor_; }

 private:
  static size_t PayloadBytes(const nodefl_wire_Envelope& message) {
    return message.which_body == nodefl_wire_Envelope_relay_send_tag ? message.body.relay_send.sealed.size
                                                                      : message.body.job_data.data.size;
  }
  size_t EntryBytes(size_t at) const;

  Span<uint8_t> memory_;
  size_t size_ = 0;    // bytes in use
  size_t cursor_ = 0;  // bytes of entries written on the current connection
  size_t previous_cursor_ = 0;
  size_t count_ = 0;
  uint64_t last_id_ = 0;
};

}  // namespace nodefl::device
