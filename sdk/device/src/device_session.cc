// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/device/device_session.h"

#include <cstdio>
#include <cstring>

#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::device {
namespace {

constexpr char kSoftware[] = "nodefl-sdk/0.1";

void CopyText(char* dst, size_t capacity, const char* src) {
  std::snprintf(dst, capacity, "%s", src == nullptr ? "" : src);
}

}  // namespace

const char* SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kIdle: return "idle";
    case SessionState::kAwaitingWelcome: return "awaiting-welcome";
    case SessionState::kReady: return "ready";
    case SessionState::kClosed: return "closed";
  }
  return "?";
}

DeviceSession::DeviceSession(const SessionOptions& options, const SessionBuffers& buffers)
    : options_(options),
      buffers_(buffers),
      decoder_(buffers.frame, options.max_frame_payload),
      unacked_(buffers.unacked) {
  std::memset(&in_, 0, sizeof(in_));
  std::memset(&out_, 0, sizeof(out_));
}

Status DeviceSession::AddRole(Role& role) {
  if (RoleForKind(role.kind()) != nullptr) return Status::AlreadyExists();
  return roles_.push_back(&role);
}

Role* DeviceSession::RoleForKind(nodefl_wire_JobKind kind) {
  for (Role* r : roles_) {
    if (r->kind() == kind) return r;
  }
  return nullptr;
}

Role* DeviceSession::RoleForJob(uint64_t job_id) {
  ActiveJob* job = FindJob(job_id);
  return job != nullptr ? job->role : nullptr;
}

DeviceSession::ActiveJob* DeviceSession::FindJob(uint64_t job_id) {
  for (ActiveJob& j : jobs_) {
    if (j.job_id == job_id) return &j;
  }
  return nullptr;
}

bool DeviceSession::OutputRoom() const {
  return buffers_.output.size() - output_size_ >= protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
}

bool DeviceSession::CanSend() const {
  // Kept sends are the device's credit: with no room to keep another (the
  // server has not acknowledged enough), roles wait.
  return OutputRoom() && (!unacked_.enabled() || (!unacked_.resend_pending() && unacked_.has_room()));
}

void DeviceSession::ConsumeOutput(size_t n) {
  NODEFL_CHECK(n <= output_size_);
  std::memmove(buffers_.output.data(), buffers_.output.data() + n, output_size_ - n);
  output_size_ -= n;
  if (output_size_ == 0 && close_after_flush_) {
    close_after_flush_ = false;
    state_ = SessionState::kClosed;
  }
}

nodefl_wire_Envelope& DeviceSession::NewMessage(pb_size_t body_tag, uint64_t job_id, uint32_t round) {
  std::memset(&out_, 0, sizeof(out_));
  out_.which_body = body_tag;
  out_.job_id = job_id;
  out_.round = round;
  return out_;
}

Status DeviceSession::Send(nodefl_wire_Envelope& message) {
  const bool session_message = message.which_body == nodefl_wire_Envelope_hello_tag ||
                               message.which_body == nodefl_wire_Envelope_goodbye_tag;
  if (state_ == SessionState::kClosed) return Status::FailedPrecondition();
  if (state_ != SessionState::kReady && !session_message) return Status::FailedPrecondition();
  // RelaySends and JobData records (uploads for the server) are kept until
  // the server acknowledges them, in one numbering.
  if (UnackedSends::Keepable(message) && unacked_.enabled()) {
    uint64_t& send_id = UnackedSends::SendId(message);
    if (!unacked_.Fits(message)) {
      // No room to keep it (a role sent while CanSend() was false): out it
      // goes unnumbered, as in protocol v1, rather than fail the role.
      send_id = 0;
      ++counters_.sends_unkept;
      return Encode(message);
    }
    send_id = next_send_id_;
    if (unacked_.resend_pending()) {
      // Older kept sends wait to be written again: this one queues behind
      // them (the server must see send ids in order).
      NODEFL_CHECK(unacked_.Keep(message, /*sent=*/false));
    } else {
      NODEFL_TRY(Encode(message));
      NODEFL_CHECK(unacked_.Keep(message, /*sent=*/true));
    }
    ++next_send_id_;
    ++counters_.sends_kept;
    return Status::Ok();
  }
  return Encode(message);
}

Status DeviceSession::Encode(nodefl_wire_Envelope& message) {
  message.version = protocol::kProtocolVersion;
  message.seq = next_out_seq_;
  Result<size_t> written = protocol::EncodeFrame(message, buffers_.output.subspan(output_size_));
  if (!written.ok()) return written.status();
  output_size_ += *written;
  LogReport(message);
  ++next_out_seq_;
  ++counters_.frames_out;
  return Status::Ok();
}

Status DeviceSession::SendHello(uint64_t now_us) {
  nodefl_wire_Envelope& m = NewMessage(nodefl_wire_Envelope_hello_tag);
  nodefl_wire_Hello& hello = m.body.hello;
  hello.device_id = options_.device_id;
  hello.max_frame_bytes = options_.max_frame_payload;
  hello.last_delivered_relay_id = last_relay_id_;
  std::memcpy(hello.resume_token.bytes, resume_token_, resume_token_size_);
  hello.resume_token.size = static_cast<pb_size_t>(resume_token_size_);
  CopyText(hello.software, sizeof(hello.software), kSoftware);
  NODEFL_TRY(Send(m));
  state_ = SessionState::kAwaitingWelcome;
  hello_sent_us_ = now_us;
  last_tx_us_ = now_us;
  return Status::Ok();
}

Status DeviceSession::Start(uint64_t now_us) {
  if (state_ != SessionState::kIdle) return Status::FailedPrecondition();
  if (buffers_.output.size() < 2 * (protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes) ||
      buffers_.frame.size() < protocol::kFrameHeaderBytes + options_.max_frame_payload) {
    return Status::InvalidArgument();
  }
  last_rx_us_ = now_us;
  return SendHello(now_us);
}

Status DeviceSession::Reconnect(uint64_t now_us) {
  decoder_.Reset();
  output_size_ = 0;
  close_after_flush_ = false;
  next_out_seq_ = 1;
  expected_in_seq_ = 1;
  last_rx_us_ = now_us;
  // Acks not yet sent are implied by last_delivered_relay_id in the Hello.
  acked_relay_id_ = last_relay_id_;
  state_ = SessionState::kIdle;
  return SendHello(now_us);
}

Status DeviceSession::Close(const char* reason) {
  if (state_ == SessionState::kClosed) return Status::Ok();
  nodefl_wire_Envelope& m = NewMessage(nodefl_wire_Envelope_goodbye_tag);
  CopyText(m.body.goodbye.reason, sizeof(m.body.goodbye.reason), reason);
  NODEFL_TRY(Send(m));
  CopyText(last_error_, sizeof(last_error_), reason);
  close_after_flush_ = true;
  return Status::Ok();
}

Status DeviceSession::Fail(Status status, const char* text, LogLevel level, const char* what) {
  CopyText(last_error_, sizeof(last_error_), text);
  state_ = SessionState::kClosed;
  options_.log.Log(level, "device %u: %s (%s): %s", id_for_log(), what, status.str(), last_error_);
  return status;
}

Status DeviceSession::RoleResult(Status status, const Role& role, const char* during) {
  if (!status.ok()) {
    options_.log.Log(LogLevel::kError, "device %u: role for job kind %u failed %s (%s)", id_for_log(),
                     static_cast<unsigned>(role.kind()), during, status.str());
  }
  return status;
}

void DeviceSession::LogReport(const nodefl_wire_Envelope& message) const {
  if (message.which_body != nodefl_wire_Envelope_job_report_tag || message.body.job_report.code == 0) return;
  const uint32_t code = message.body.job_report.code;
  const unsigned long long job = message.job_id;
  if (code == static_cast<uint32_t>(StatusCode::kPermissionDenied)) {
    // The ledger refused: the device's own privacy budget is spent, and the
    // role withheld the release whatever the server asked.
    options_.log.Log(LogLevel::kWarning,
                     "device %u: job %llu round %u: release refused, privacy budget exhausted (PERMISSION_DENIED)",
                     id_for_log(), job, static_cast<unsigned>(message.round));
    return;
  }
  const char* name = code <= static_cast<uint32_t>(StatusCode::kUnauthenticated)
                         ? StatusCodeName(static_cast<StatusCode>(code))
                         : "?";
  options_.log.Log(LogLevel::kWarning, "device %u: job %llu round %u: role reported %s", id_for_log(), job,
                   static_cast<unsigned>(message.round), name);
}

Status DeviceSession::OnReceived(ConstByteSpan plaintext, uint64_t now_us, size_t* consumed) {
  *consumed = 0;
  if (state_ == SessionState::kIdle || state_ == SessionState::kClosed) {
    return Status::FailedPrecondition();
  }
  while (true) {
    if (!decoder_.has_frame()) {
      if (*consumed == plaintext.size()) break;
      size_t taken = 0;
      const Status fed = decoder_.Feed(plaintext.subspan(*consumed), &taken);
      *consumed += taken;
      if (!fed.ok()) return Fail(fed, "malformed or oversize frame from server");
      if (!decoder_.has_frame()) break;
    }
    // Kept sends waiting to be written again (after a reconnect) go out
    // before more input is taken: roles cannot send behind them, so input
    // taken meanwhile would only pile up in the roles (a walk queue fills
    // and drops). Once they fill the output, input waits for the socket.
    NODEFL_TRY(PumpResends());
    // Every handler may send one frame: do not start one without room.
    // (Output room only: an acknowledgement that frees kept sends may be
    // behind this frame.)
    if (!OutputRoom()) return Status::Ok();
    last_rx_us_ = now_us;
    NODEFL_TRY(HandleFrame(decoder_.frame(), now_us));
    decoder_.PopFrame();
    if (state_ == SessionState::kClosed) break;
  }
  NODEFL_TRY(PumpResends());
  return SendAckIfDue(false);
}

Status DeviceSession::HandleFrame(ConstByteSpan payload, uint64_t now_us) {
  ++counters_.frames_in;
  const Status decoded = protocol::DecodeEnvelope(payload, &in_);
  if (!decoded.ok()) return Fail(decoded, "undecodable message from server");
  if (in_.seq != expected_in_seq_) return Fail(Status::DataLoss(), "out-of-sequence message from server");
  ++expected_in_seq_;
  return HandleEnvelope(now_us);
}

Status DeviceSession::HandleEnvelope(uint64_t /*now_us*/) {
  switch (in_.which_body) {
    case nodefl_wire_Envelope_welcome_tag:
      return HandleWelcome();
    case nodefl_wire_Envelope_error_tag: {
      const uint32_t code = in_.body.error.code;
      const Status status = (code == 0 || code > static_cast<uint32_t>(StatusCode::kUnauthenticated))
                                ? Status::Unknown()
                                : Status(static_cast<StatusCode>(code));
      return Fail(status, in_.body.error.message, LogLevel::kError, "server sent Error");
    }
    case nodefl_wire_Envelope_goodbye_tag:
      // The server ends sessions after a job, too: not a fault by itself.
      return Fail(Status::Cancelled(), in_.body.goodbye.reason, LogLevel::kInfo, "server said goodbye");
    case nodefl_wire_Envelope_heartbeat_tag:
      return Status::Ok();
    default:
      break;
  }
  if (state_ != SessionState::kReady) {
    return Fail(Status::FailedPrecondition(), "message before Welcome");
  }
  switch (in_.which_body) {
    case nodefl_wire_Envelope_relay_deliver_tag:
      return HandleRelayDeliver();
    case nodefl_wire_Envelope_relay_send_ack_tag:
      return HandleRelaySendAck();
    case nodefl_wire_Envelope_job_start_tag:
    case nodefl_wire_Envelope_peer_certificate_tag:
    case nodefl_wire_Envelope_chunk_header_tag:
    case nodefl_wire_Envelope_chunk_tag:
    case nodefl_wire_Envelope_job_data_tag:
      return HandleJobMessage();
    default:
      // Device-to-server message types coming from the server.
      return Fail(Status::Unimplemented(), "unexpected message type from server");
  }
}

Status DeviceSession::HandleWelcome() {
  if (state_ != SessionState::kAwaitingWelcome) {
    return Fail(Status::FailedPrecondition(), "unexpected Welcome");
  }
  const nodefl_wire_Welcome& w = in_.body.welcome;
  if (w.resume_token.size > sizeof(resume_token_)) return Fail(Status::DataLoss(), "bad resume token");
  const bool asked_to_resume = resume_token_size_ > 0;
  std::memcpy(resume_token_, w.resume_token.bytes, w.resume_token.size);
  resume_token_size_ = w.resume_token.size;
  heartbeat_interval_ms_ = w.heartbeat_interval_ms;
  idle_timeout_ms_ = w.idle_timeout_ms;
  resumed_ = w.resumed;
  if (!resumed_) {
    // A fresh server-side session numbers deliveries from 1 again (e.g. the
    // server restarted, or it dropped our old queue): forget ours.
    last_relay_id_ = 0;
    acked_relay_id_ = 0;
    // It no longer knows which of our kept sends it routed: sending them
    // again could deliver one twice. Roles re-send what they need
    // (Role::OnSessionRestart).
    const size_t forgotten = unacked_.Clear();
    counters_.sends_forgotten += forgotten;
    if (forgotten > 0) {
      options_.log.Log(LogLevel::kWarning, "device %u: %u unacknowledged kept sends dropped with the old session",
                       id_for_log(), static_cast<unsigned>(forgotten));
    }
  } else {
    if (w.last_relay_send_id >= next_send_id_) {
      return Fail(Status::DataLoss(), "Welcome acknowledges a send never made");
    }
    unacked_.Release(w.last_relay_send_id);
    unacked_.Rewind();
  }
  state_ = SessionState::kReady;
  if (resumed_) {
    options_.log.Log(LogLevel::kInfo, "device %u: resume accepted; relay deliveries continue after id %llu",
                     id_for_log(), static_cast<unsigned long long>(last_relay_id_));
  } else if (asked_to_resume) {
    // Relay messages the old server session still held for this device are
    // gone; roles re-send what they need (Role::OnSessionRestart).
    options_.log.Log(LogLevel::kWarning, "device %u: resume refused; the server started a fresh session",
                     id_for_log());
  } else {
    options_.log.Log(LogLevel::kInfo, "device %u: registered (heartbeat %u ms, idle timeout %u ms)",
                     id_for_log(), static_cast<unsigned>(heartbeat_interval_ms_),
                     static_cast<unsigned>(idle_timeout_ms_));
  }
  if (restarted_) {
    for (Role* role : roles_) role->OnSessionRestart(resumed_);
  }
  restarted_ = true;
  return Status::Ok();
}

Status DeviceSession::HandleJobMessage() {
  Role* role = nullptr;
  if (in_.which_body == nodefl_wire_Envelope_job_start_tag) {
    // Read the kind as a number: a newer server may send a kind this build's
    // enum does not list.
    const uint32_t kind = protocol::EnumValue(in_.body.job_start.kind);
    role = protocol::IsKnownJobKind(kind) ? RoleForKind(static_cast<nodefl_wire_JobKind>(kind)) : nullptr;
    if (role == nullptr) return Fail(Status::Unimplemented(), "job kind not supported by this device");
    if (RoleForJob(in_.job_id) == nullptr) {
      if (jobs_.full()) {
        // Forget the oldest job: a device runs a few jobs at a time, and a
        // late message for a forgotten job is refused, not misrouted.
        for (size_t i = 1; i < jobs_.size(); ++i) jobs_[i - 1] = jobs_[i];
        jobs_.pop_back();
      }
      const Status added = jobs_.push_back(ActiveJob{in_.job_id, role, 0});
      if (!added.ok()) return Fail(added, "too many active jobs");
    }
  } else {
    ActiveJob* job = FindJob(in_.job_id);
    if (job == nullptr) return Fail(Status::FailedPrecondition(), "message for an unknown job");
    role = job->role;
    if (in_.which_body == nodefl_wire_Envelope_job_data_tag && in_.body.job_data.send_id != 0) {
      // The server numbers a job's records to this device in order and
      // writes the unreported round's again after a reconnect.
      if (in_.body.job_data.send_id <= job->last_record_id) {
        ++counters_.records_repeated;
        return Status::Ok();
      }
      job->last_record_id = in_.body.job_data.send_id;
    }
  }
  return RoleResult(role->OnMessage(in_, *this), *role, "on a message for its job");
}

Status DeviceSession::HandleRelayDeliver() {
  const uint64_t relay_id = in_.body.relay_deliver.relay_id;
  if (relay_id == 0) return Fail(Status::DataLoss(), "relay delivery without id");
  if (relay_id <= last_relay_id_) {
    // Re-delivered after a resume: processed before, only the ack was lost.
    ++counters_.relay_duplicates;
    return Status::Ok();
  }
  last_relay_id_ = relay_id;
  Role* role = RoleForJob(in_.job_id);
  if (role == nullptr) {
    ++counters_.relay_orphans;
    return Status::Ok();
  }
  ++counters_.relay_delivered;
  return RoleResult(role->OnMessage(in_, *this), *role, "on a relay delivery");
}

Status DeviceSession::HandleRelaySendAck() {
  const uint64_t id = in_.body.relay_send_ack.send_id;
  if (id >= next_send_id_) return Fail(Status::DataLoss(), "acknowledgement of a send never made");
  unacked_.Release(id);
  return Status::Ok();
}

Status DeviceSession::PumpResends() {
  while (state_ == SessionState::kReady && unacked_.resend_pending() && OutputRoom()) {
    unacked_.NextResend(&out_);
    const Status written = Encode(out_);
    if (!written.ok()) {
      unacked_.UndoResend();
      // Room was checked: only an encoding failure lands here, and a kept
      // send encoded once before.
      return Fail(written, "a kept send could not be written again");
    }
    ++counters_.sends_resent;
  }
  return Status::Ok();
}

Status DeviceSession::SendAckIfDue(bool force) {
  if (state_ != SessionState::kReady || last_relay_id_ == acked_relay_id_) return Status::Ok();
  if (!force && last_relay_id_ - acked_relay_id_ < options_.ack_every) return Status::Ok();
  if (!OutputRoom()) return Status::Ok();  // retried on the next Poll
  nodefl_wire_Envelope& m = NewMessage(nodefl_wire_Envelope_relay_ack_tag);
  m.body.relay_ack.relay_id = last_relay_id_;
  NODEFL_TRY(Send(m));
  acked_relay_id_ = last_relay_id_;
  return Status::Ok();
}

Status DeviceSession::Poll(uint64_t now_us) {
  switch (state_) {
    case SessionState::kIdle:
    case SessionState::kClosed:
      return Status::Ok();
    case SessionState::kAwaitingWelcome:
      if (now_us - hello_sent_us_ > options_.welcome_timeout_us) {
        return Fail(Status::DeadlineExceeded(), "no Welcome from server");
      }
      return Status::Ok();
    case SessionState::kReady:
      break;
  }
  if (idle_timeout_ms_ != 0 && now_us - last_rx_us_ > uint64_t{idle_timeout_ms_} * 1000) {
    return Fail(Status::DeadlineExceeded(), "server silent for longer than the idle timeout");
  }
  NODEFL_TRY(SendAckIfDue(true));
  NODEFL_TRY(PumpResends());
  for (Role* role : roles_) {
    NODEFL_TRY(RoleResult(role->OnPoll(now_us, *this), *role, "in Poll"));
  }
  if (output_size_ > 0) last_tx_us_ = now_us;
  if (heartbeat_interval_ms_ != 0 && now_us - last_tx_us_ >= uint64_t{heartbeat_interval_ms_} * 1000 &&
      OutputRoom()) {
    nodefl_wire_Envelope& m = NewMessage(nodefl_wire_Envelope_heartbeat_tag);
    m.body.heartbeat.sent_at_us = now_us;
    NODEFL_TRY(Send(m));
    last_tx_us_ = now_us;
  }
  return Status::Ok();
}

}  // namespace nodefl::device
