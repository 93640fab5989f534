// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RelayJournal: what the relay tells durable storage so that its queues
// outlive the server process (server/store's StoredRelayJournal writes it
// to SQLite; docs/reliability.md "Server restarts").
//
// The relay calls these while it holds the lock of the device concerned
// (a destination's stripe for Queued/Acked/Dropped, a source's for
// SourceReset), so for any one device the calls come in the relay's own
// order. An implementation must be quick (append to a buffer), must not
// block on I/O and must never call back into the relay.
#pragma once

#include <cstdint>

#include "nodefl/server/core/relay_message.h"

namespace nodefl::server {

class RelayJournal {
 public:
  virtual ~RelayJournal() = default;

  // `message` was queued for `dst`. `send_id` is the source's number for
  // it (RelaySend.send_id; 0 when unnumbered): journaled with it, it lets
  // a restarted relay refuse the source's resend of a message it restored.
  virtual void Queued(uint32_t dst, const RelayMessage& message, uint64_t send_id) = 0;
  // `dst` acknowledged every message up to `relay_id`.
  virtual void Acked(uint32_t dst, uint64_t relay_id) = 0;
  // Every message held for `dst` was dropped (it began a new session).
  virtual void Dropped(uint32_t dst) = 0;
  // `src` began a session afresh and numbers its sends from 1 again.
  virtual void SourceReset(uint32_t src) = 0;
};

}  // namespace nodefl::server
