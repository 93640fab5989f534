// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ReplayWindow: rejects sealed payloads a device has already accepted. It
// keeps the highest counter accepted from one peer (one window per sending
// peer) and accepts only strictly greater counters: senders number their
// payloads 1, 2, 3, ... per direction (seal.h), and the relay delivers one
// sender's payloads in order, so "strictly increasing" is exact and costs 8
// bytes per peer.
//
// Order of operations: Open() first, Accept() only for a payload that
// opened. Accepting an unauthenticated counter would let a forger push the
// window forward and make the genuine messages look like replays.
//
// The window must survive as long as the pair keys do; a device that forgets
// it (restart) should persist highest() or re-derive fresh credentials.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"

namespace nodefl::seal {

class ReplayWindow {
 public:
  constexpr ReplayWindow() = default;
  // Resumes from a persisted highest().
  constexpr explicit ReplayWindow(uint64_t highest_accepted) : highest_(highest_accepted) {}

  // Accepts `counter` if it is greater than every counter accepted so far.
  // kAlreadyExists for a duplicate or an older counter (a replay), and
  // kInvalidArgument for 0, which no sender uses.
  Status Accept(uint64_t counter) {
    if (counter == 0) return Status::InvalidArgument();
    if (counter <= highest_) return Status::AlreadyExists();
    highest_ = counter;
    return Status::Ok();
  }

  uint64_t highest() const { return highest_; }

 private:
  uint64_t highest_ = 0;
};

}  // namespace nodefl::seal
