// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One TCP connection of the board client: a poll(2) loop that moves
// ciphertext between the socket and the SDK's client::DevicePump (which
// owns TLS and the session; docs/porting.md, "The connection"). Single
// threaded; returns when the connection ends, saying how.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nodefl/client/device_pump.h"
#include "nodefl/core/status.h"

namespace nodefl::device_linux {

enum class ConnectionEnd {
  kClosed,  // closed cleanly (our Goodbye, or the server's close_notify)
  kLost,    // the socket broke or the server vanished: reconnect
  kFailed,  // the pump failed (TLS or the session): Outcome::status says why
};

struct ConnectionHooks {
  // Asked before every wait: true to close the session now (Goodbye, then
  // close_notify), e.g. after SIGTERM or once the job is done.
  std::function<bool()> want_close;
  // After every step that can have moved a role (input taken, output
  // written, a tick), before any of that step's output is written to the
  // socket: hands results between roles and persists the privacy ledger.
  // A failure closes the session with its text as the reason.
  std::function<Status()> after_step;
  // The handshake finished (the session's Hello is queued).
  std::function<void()> on_open;
};

struct ConnectionOutcome {
  ConnectionEnd end = ConnectionEnd::kLost;
  Status status;       // kFailed: the pump's
  std::string detail;  // for the log
  bool opened = false;  // the handshake had finished
};

// Runs the connection on `fd` (connected, non-blocking) until it ends;
// does not close `fd`. `tick_ms`: the longest wait between Ticks.
ConnectionOutcome RunConnection(int fd, client::DevicePump& pump, const ConnectionHooks& hooks, int tick_ms);

// Microseconds on the monotonic clock (the pump's and the session's time).
uint64_t NowMicros();

}  // namespace nodefl::device_linux
