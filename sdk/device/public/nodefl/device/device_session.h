// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceSession: the device side of the nodefl protocol as a sans-IO state
// machine (docs/protocol.md). The app moves bytes; the session never touches
// a socket, a thread or the heap:
//
//   plaintext from TLS ──► OnReceived() ──► frames ──► envelopes ──► roles
//   roles / session    ──► Send()       ──► frames ──► PendingOutput() ──► TLS
//   app timer          ──► Poll(now)    ──► heartbeats, acks, role progress
//
// It handles registration (Hello/Welcome), resumption after a reconnect
// (resume token; the server re-delivers relay messages the device had not
// acknowledged, and the session drops the ones it already processed),
// heartbeats and idle detection, relay acknowledgements, and dispatch of job
// messages to roles by job kind and job id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/config.h"
#include "nodefl/core/fixed_vector.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/role.h"
#include "nodefl/device/unacked_sends.h"
#include "nodefl/platform/platform.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::device {

enum class SessionState : uint8_t {
  kIdle,             // constructed; Start() not called yet
  kAwaitingWelcome,  // Hello sent
  kReady,            // registered: heartbeats, relay and jobs flow
  kClosed,           // error or goodbye; Reconnect() to start again
};

const char* SessionStateName(SessionState state);

struct SessionOptions {
  uint32_t device_id = 0;
  // Largest frame payload this device accepts (advertised in Hello).
  uint32_t max_frame_payload = protocol::kMaxFramePayloadBytes;
  // Give up on a server that does not answer Hello within this time.
  uint64_t welcome_timeout_us = 10'000'000;
  // Acknowledge relay deliveries after this many (and on every Poll).
  uint32_t ack_every = 16;
  // Optional: where the session says what happened to it (why it closed,
  // a resume accepted or refused, an Error from the server, a role failing
  // or reporting a refused release). No sink (the default) logs nothing.
  // Lines are formatted on the stack (platform.h), never allocated.
  LogSink log;
};

// Everything the session needs from the app, as caller-owned memory.
struct SessionBuffers {
  // Frame reassembly: at least protocol::kFrameHeaderBytes + max_frame_payload.
  Span<uint8_t> frame;
  // Encoded frames waiting to be written to TLS. At least two maximum
  // frames; larger lets roles send more per Poll.
  Span<uint8_t> output;
  // Optional: copies of RelaySends and JobData uploads until the server
  // acknowledges them, sent again after a reconnect (unacked_sends.h). At
  // least UnackedSends::kMaxEntryBytes to enable; a few of those let roles
  // keep sending while acknowledgements travel (payloads are mostly far
  // smaller). Empty: sends are not kept and a broken connection can lose
  // them (protocol v1 behaviour).
  Span<uint8_t> unacked = {};
};

class DeviceSession {
 public:
  DeviceSession(const SessionOptions& options, const SessionBuffers& buffers);
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  // Roles must outlive the session. At most kMaxRoles.
  static constexpr size_t kMaxRoles = NODEFL_MAX_ROLES;
  Status AddRole(Role& role);

  // Queues Hello (first contact, or resume when a token is held).
  Status Start(uint64_t now_us);
  // After the transport broke: forget partial input/output and the
  // connection's sequence numbers, keep roles, jobs and the resume token,
  // and queue a new Hello.
  Status Reconnect(uint64_t now_us);
  // Queues Goodbye; the session is closed once the output is flushed.
  Status Close(const char* reason);

  // Feeds plaintext received from the server. Processes every complete
  // frame unless output space runs short, in which case it stops early:
  // `*consumed` tells how much input was taken; offer the rest again after
  // writing out PendingOutput(). A protocol violation by the server or an
  // Error message closes the session and returns the reason.
  Status OnReceived(ConstByteSpan plaintext, uint64_t now_us, size_t* consumed);

  // Timers (welcome timeout, heartbeat, idle timeout), deferred acks and
  // role progress. Call after OnReceived and whenever output was drained, or
  // at least every heartbeat interval. kDeadlineExceeded means the server is
  // gone: reconnect.
  Status Poll(uint64_t now_us);

  ConstByteSpan PendingOutput() const { return ConstByteSpan(buffers_.output.data(), output_size_); }
  void ConsumeOutput(size_t n);

  // For roles: a zeroed envelope with `body_tag` set, to fill and Send().
  nodefl_wire_Envelope& NewMessage(pb_size_t body_tag, uint64_t job_id = 0, uint32_t round = 0);
  // Encodes the envelope from NewMessage() into the output. Fills in version
  // and seq. kResourceExhausted when the output lacks room (try again later);
  // kFailedPrecondition before Welcome (except for Hello/Goodbye). With
  // kept sends, a RelaySend or JobData gets the next send id and a copy is
  // kept (while older kept sends wait to be written again it queues behind
  // them; other messages do not wait); without room to keep it, it goes
  // out unnumbered.
  Status Send(nodefl_wire_Envelope& message);
  // Room for one more maximum-size frame (and, with kept sends, room to
  // keep one and no resend still waiting)? Roles send only when true.
  bool CanSend() const;

  SessionState state() const { return state_; }
  uint32_t device_id() const { return options_.device_id; }
  // The server's last Error text, or the close reason.
  const char* last_error() const { return last_error_; }
  bool resumed() const { return resumed_; }

  struct Counters {
    uint64_t frames_in = 0;
    uint64_t frames_out = 0;
    uint64_t relay_delivered = 0;   // passed to roles
    uint64_t relay_duplicates = 0;  // re-deliveries skipped after a resume
    uint64_t relay_orphans = 0;     // for a job no role runs
    uint64_t sends_kept = 0;        // RelaySends and JobData numbered and kept until acknowledged
    uint64_t sends_resent = 0;      // kept sends written again after a reconnect
    uint64_t sends_unkept = 0;      // sent unnumbered: no room to keep them
    uint64_t sends_forgotten = 0;   // kept sends dropped because the server began a fresh session
    uint64_t records_repeated = 0;  // job records from the server seen before (written again after a reconnect)
  };
  const Counters& counters() const { return counters_; }

 private:
  // The id for "%u" in log lines: uint32_t is unsigned long on some
  // targets (arm-none-eabi), where %u with it would be a format mismatch.
  unsigned id_for_log() const { return static_cast<unsigned>(options_.device_id); }
  struct ActiveJob {
    uint64_t job_id;
    Role* role;
    // The highest numbered JobData record taken from the server for this
    // job (JobData.send_id, numbered per job): the server writes a round's
    // records again after a reconnect, and those seen before are dropped.
    uint64_t last_record_id = 0;
  };
  static constexpr size_t kMaxActiveJobs = NODEFL_MAX_ACTIVE_JOBS;

  Status HandleFrame(ConstByteSpan payload, uint64_t now_us);
  Status HandleEnvelope(uint64_t now_us);
  Status HandleWelcome();
  Status HandleJobMessage();
  Status HandleRelayDeliver();
  Status HandleRelaySendAck();
  // Writes kept sends again while the output has room.
  Status PumpResends();
  // Version, seq and the frame into the output; no state checks.
  Status Encode(nodefl_wire_Envelope& message);
  bool OutputRoom() const;
  Status SendHello(uint64_t now_us);
  Status SendAckIfDue(bool force);
  // Closes the session with `status`; `text` becomes last_error() and, with
  // `what` in front, one log line at `level`.
  Status Fail(Status status, const char* text, LogLevel level = LogLevel::kError,
              const char* what = "session closed");
  // A role's error ends the connection (role.h); say which job it was.
  Status RoleResult(Status status, const Role& role, const char* during);
  // Reports whose code is not OK (a refused release, a failed round).
  void LogReport(const nodefl_wire_Envelope& message) const;
  Role* RoleForJob(uint64_t job_id);
  ActiveJob* FindJob(uint64_t job_id);
  Role* RoleForKind(nodefl_wire_JobKind kind);

  SessionOptions options_;
  SessionBuffers buffers_;
  protocol::FrameDecoder decoder_;
  size_t output_size_ = 0;
  bool close_after_flush_ = false;

  SessionState state_ = SessionState::kIdle;
  uint64_t next_out_seq_ = 1;
  uint64_t expected_in_seq_ = 1;
  uint64_t hello_sent_us_ = 0;
  uint64_t last_rx_us_ = 0;
  uint64_t last_tx_us_ = 0;
  uint32_t heartbeat_interval_ms_ = 0;
  uint32_t idle_timeout_ms_ = 0;

  uint8_t resume_token_[32] = {};
  size_t resume_token_size_ = 0;
  bool resumed_ = false;
  bool restarted_ = false;  // a Welcome was seen before: later ones follow reconnects
  // Relay bookkeeping: highest relay_id handed to a role, and acked.
  uint64_t last_relay_id_ = 0;
  uint64_t acked_relay_id_ = 0;
  // Kept RelaySends (numbered from 1, never reused by this session).
  UnackedSends unacked_;
  uint64_t next_send_id_ = 1;

  InlineVector<Role*, kMaxRoles> roles_;
  InlineVector<ActiveJob, kMaxActiveJobs> jobs_;
  Counters counters_;
  char last_error_[97] = {};

  // One decoded and one outgoing envelope (each ~4 KiB), kept here rather
  // than on the stack so a small-stack microcontroller can run the session.
  nodefl_wire_Envelope in_;
  nodefl_wire_Envelope out_;
};

}  // namespace nodefl::device
