// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DevicePump: joins a device's TLS endpoint (tls::TlsEndpoint) and its
// session (device::DeviceSession) into one sans-IO connection, so that a
// port only moves ciphertext between the pump and its socket:
//
//   socket bytes ──► OnReceived() ──► TLS records ──► plaintext ──► session
//   session frames ──► TLS records ──► PendingOutput() ──► socket
//                                      ConsumeOutput(bytes written)
//   app timer ──► Tick(now): handshake deadline, heartbeats, role progress
//
// A port's main loop (docs/porting.md):
//
//   pump.Connect(now)                          // a TCP connection is up
//   loop:
//     write PendingOutput() to the socket, ConsumeOutput(written, now)
//     read from the socket, OnReceived(bytes, now, &consumed); offer the
//       bytes not consumed again after the next write
//     Tick(now) when the timer fires (at least every heartbeat interval)
//     state() kClosed or kFailed: write what is pending, close the socket
//
// What it does for the port:
//   * runs the TLS handshake, then starts the session (Hello; a resume
//     Hello on every later Connect, so the server re-delivers what the
//     device had not acknowledged);
//   * decrypts records into a caller buffer and hands the plaintext to the
//     session, and encrypts the session's frames into TLS records, with
//     back-pressure both ways: when the socket is slow, the pump stops
//     taking bytes (OnReceived reports fewer consumed) instead of buffering;
//   * closes cleanly: Goodbye, then TLS close_notify.
//
// Errors are Status values and sticky: once a call fails, state() is
// kFailed and every later call returns the same Status until the next
// Connect(). failure_layer() says whether TLS (a bad record, a certificate,
// an alert) or the session (the server's Error, a protocol violation, a
// timeout) failed; endpoint().last_error_text() and session().last_error()
// have the details. After a failure, send whatever PendingOutput() still
// holds (TLS may have queued an alert) and close the socket.
//
// Memory: the pump holds two references, a few flags and a span over the
// caller's plaintext buffer; it never allocates. The endpoint and the
// session keep their own caller-provided buffers. MbedTLS allocates inside
// the handshake in Debian's build (docs/security.md); decrypting, encrypting
// and closing an established connection do not allocate.
//
// Not thread-safe: one thread (or strand) drives a pump. Neither copyable
// nor movable (it refers to the endpoint and the session, which must
// outlive it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/tls/endpoint.h"

namespace nodefl::client {

// Buffer sizes that suit connections carrying only nodefl frames (at most a
// few KiB each). Any non-zero sizes work; smaller ones cost more rounds.
//   endpoint inbound/outbound: tls::TlsEndpoint::Init's two buffers;
//   plaintext: the pump's buffer of decrypted bytes the session has not
//   taken yet.
inline constexpr size_t kPumpTlsInboundBytes = 4096;
inline constexpr size_t kPumpTlsOutboundBytes = 8192;
inline constexpr size_t kPumpPlaintextBytes = 4096;

enum class PumpState : uint8_t {
  kIdle,         // constructed; Connect() starts a connection
  kHandshaking,  // TLS handshake in progress
  kOpen,         // handshake done, session started: frames flow
  kClosing,      // Close(): flushing the Goodbye, then close_notify
  kClosed,       // close_notify queued, or the server closed cleanly
  kFailed,       // status() says why
};

const char* PumpStateName(PumpState state);

enum class PumpLayer : uint8_t {
  kNone,
  kTls,      // the TLS endpoint failed (or the handshake timed out)
  kSession,  // the device session failed
};

struct PumpOptions {
  // Give up on a handshake that has not finished this long after Connect()
  // (checked by Tick). 0: no limit (the port bounds it).
  uint64_t handshake_timeout_us = 10'000'000;
};

class DevicePump {
 public:
  // `endpoint` must be initialised as a client (tls::TlsEndpoint::Init with
  // the server's name). `session` must not have been started: the pump
  // starts it when the first handshake completes. `plaintext` must be
  // non-empty (kPumpPlaintextBytes is a good size). All three must outlive
  // the pump.
  DevicePump(tls::TlsEndpoint& endpoint, device::DeviceSession& session, ByteSpan plaintext,
             const PumpOptions& options = PumpOptions());
  DevicePump(const DevicePump&) = delete;
  DevicePump& operator=(const DevicePump&) = delete;

  // A new transport connection is up (first connect or reconnect): forgets
  // the previous connection's TLS state and buffered bytes and begins the
  // handshake (the ClientHello is then in PendingOutput()). Works from any
  // state and clears a failure. kInvalidArgument for an empty plaintext
  // buffer, TLS errors as the endpoint reports them.
  Status Connect(uint64_t now_us);

  // Feeds ciphertext received from the socket and processes as much as the
  // buffers allow: handshake messages, records, frames (and a session Poll,
  // as DeviceSession asks after every receive). `*consumed` tells how much
  // of `ciphertext` was taken; when it is less than all of it, the output
  // is full: write PendingOutput(), ConsumeOutput(), then offer the rest
  // again. kFailedPrecondition before Connect(); after kClosed, bytes are
  // taken and dropped.
  Status OnReceived(ConstByteSpan ciphertext, uint64_t now_us, size_t* consumed);

  // Ciphertext to write to the socket, oldest first. Valid until the next
  // call on the pump.
  ConstByteSpan PendingOutput() const;
  // Drops the first `count` bytes of PendingOutput() (they were written) and
  // uses the room: more of the session's frames become records, and input
  // that waited for output room is processed. `count` larger than what is
  // pending is a programming error.
  Status ConsumeOutput(size_t count, uint64_t now_us);

  // Timers: the handshake deadline while handshaking; the session's Poll
  // (welcome and idle timeouts, heartbeats, acks, role progress) once open.
  // kDeadlineExceeded: the server is gone; reconnect.
  Status Tick(uint64_t now_us);

  // Queues the session's Goodbye (if the session is registered or waiting
  // for its Welcome) and, once it and everything before it are records,
  // close_notify; state() is then kClosed. Write PendingOutput(), then close
  // the socket. If the session has no room for the Goodbye, returns its
  // kResourceExhausted and changes nothing: write output and call again.
  // During the handshake there is no session to end: state() becomes
  // kClosed at once.
  Status Close(const char* reason);

  PumpState state() const { return state_; }
  bool handshake_done() const { return state_ == PumpState::kOpen || state_ == PumpState::kClosing; }
  // True when the server sent close_notify.
  bool peer_closed() const { return endpoint_.peer_closed(); }
  Status status() const { return status_; }
  PumpLayer failure_layer() const { return failure_layer_; }

  tls::TlsEndpoint& endpoint() { return endpoint_; }
  device::DeviceSession& session() { return session_; }

 private:
  // Everything the buffers allow without new input: the handshake, output
  // frames into records, records into plaintext, plaintext into frames.
  Status Advance(uint64_t now_us);
  Status FinishHandshake(uint64_t now_us);
  Status EncryptSessionOutput(bool* progress);
  Status DeliverInput(uint64_t now_us, bool* progress);
  Status SendCloseNotifyIfFlushed();
  Status Fail(Status status, PumpLayer layer);

  tls::TlsEndpoint& endpoint_;
  device::DeviceSession& session_;
  ByteSpan plaintext_;
  PumpOptions options_;
  size_t plaintext_size_ = 0;
  uint64_t connected_at_us_ = 0;
  PumpState state_ = PumpState::kIdle;
  Status status_;
  PumpLayer failure_layer_ = PumpLayer::kNone;
  bool session_started_ = false;  // later connections resume the session
};

}  // namespace nodefl::client
