// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeliveryTarget: what the network layer's connection object implements so
// the registry and the relay can reach it without knowing about sockets.
//
// Both calls are made OUTSIDE every registry/relay lock, from whatever thread
// caused them (a sender's strand, another device's Attach). Implementations
// must be quick and must not block: the usual body posts a wake-up to the
// connection's own strand. They may call back into the registry or the
// relay, since no lock is held.
#pragma once

#include <cstdint>

namespace nodefl::server {

enum class CloseReason : uint8_t {
  kReplaced,        // a newer connection attached for the same device
  kServerShutdown,  // DeviceRegistry::RequestCloseAll
};

class DeliveryTarget {
 public:
  virtual ~DeliveryTarget() = default;

  // The relay queued a message this connection has not taken yet, after the
  // connection had taken everything (edge-triggered on "backlog became
  // non-empty"). The writer must latch it: if the wake-up arrives while it
  // is busy, it must still call Relay::Take again before it sleeps. Spurious
  // wake-ups are possible (Take then returns nothing).
  virtual void OnRelayReady() = 0;

  // Close this connection soon (send Goodbye if convenient). For kReplaced
  // the registry already names the successor as the device's connection.
  // Either way the connection still calls DeviceRegistry::Detach and
  // Relay::EndSession with its generation when it is gone (both are no-ops
  // for a replaced generation).
  virtual void RequestClose(CloseReason reason) = 0;
};

}  // namespace nodefl::server
