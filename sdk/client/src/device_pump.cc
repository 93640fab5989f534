// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/client/device_pump.h"

#include <cstring>

#include "nodefl/core/assert.h"

namespace nodefl::client {

const char* PumpStateName(PumpState state) {
  switch (state) {
    case PumpState::kIdle: return "idle";
    case PumpState::kHandshaking: return "handshaking";
    case PumpState::kOpen: return "open";
    case PumpState::kClosing: return "closing";
    case PumpState::kClosed: return "closed";
    case PumpState::kFailed: return "failed";
  }
  return "?";
}

DevicePump::DevicePump(tls::TlsEndpoint& endpoint, device::DeviceSession& session, ByteSpan plaintext,
                       const PumpOptions& options)
    : endpoint_(endpoint), session_(session), plaintext_(plaintext), options_(options) {}

Status DevicePump::Fail(Status status, PumpLayer layer) {
  status_ = status.ok() ? Status::Internal() : status;
  failure_layer_ = layer;
  state_ = PumpState::kFailed;
  return status_;
}

Status DevicePump::Connect(uint64_t now_us) {
  if (plaintext_.empty()) return Status::InvalidArgument();
  plaintext_size_ = 0;
  status_ = Status::Ok();
  failure_layer_ = PumpLayer::kNone;
  connected_at_us_ = now_us;
  // Reset also serves a fresh endpoint, and keeps MbedTLS's record buffers
  // so a reconnect does not allocate them again.
  const Status reset = endpoint_.Reset();
  if (!reset.ok()) return Fail(reset, PumpLayer::kTls);
  state_ = PumpState::kHandshaking;
  return Advance(now_us);
}

Status DevicePump::FinishHandshake(uint64_t now_us) {
  const Result<tls::TlsProgress> progress = endpoint_.Handshake();
  if (!progress.ok()) return Fail(progress.status(), PumpLayer::kTls);
  if (*progress != tls::TlsProgress::kDone) return Status::Ok();
  // The session's welcome timer starts here rather than at Connect(), so a
  // slow handshake does not count against the server's answer to Hello.
  const Status started = session_started_ ? session_.Reconnect(now_us) : session_.Start(now_us);
  if (!started.ok()) return Fail(started, PumpLayer::kSession);
  session_started_ = true;
  state_ = PumpState::kOpen;
  return Status::Ok();
}

Status DevicePump::EncryptSessionOutput(bool* progress) {
  while (true) {
    const ConstByteSpan frames = session_.PendingOutput();
    if (frames.empty()) return Status::Ok();
    const Result<size_t> taken = endpoint_.WritePlaintext(frames);
    if (!taken.ok()) return Fail(taken.status(), PumpLayer::kTls);
    if (*taken == 0) return Status::Ok();  // records wait for the socket
    session_.ConsumeOutput(*taken);
    *progress = true;
  }
}

Status DevicePump::DeliverInput(uint64_t now_us, bool* progress) {
  if (plaintext_size_ > 0) {
    size_t taken = plaintext_size_;  // after Close(), input is dropped
    if (state_ == PumpState::kOpen) {
      const Status received = session_.OnReceived(ConstByteSpan(plaintext_.data(), plaintext_size_), now_us, &taken);
      if (!received.ok()) return Fail(received, PumpLayer::kSession);
    }
    if (taken > 0) {
      std::memmove(plaintext_.data(), plaintext_.data() + taken, plaintext_size_ - taken);
      plaintext_size_ -= taken;
      *progress = true;
    }
  }
  // Decrypt only into free room: records the session cannot take yet stay
  // in the endpoint, which then stops accepting ciphertext (back-pressure).
  if (plaintext_size_ == plaintext_.size()) return Status::Ok();
  const Result<size_t> n = endpoint_.ReadPlaintext(plaintext_.subspan(plaintext_size_));
  if (!n.ok()) {
    if (endpoint_.peer_closed()) {
      // close_notify: everything before it was read already. Plaintext the
      // session had no room for is dropped with the connection.
      state_ = PumpState::kClosed;
      return Status::Ok();
    }
    return Fail(n.status(), PumpLayer::kTls);
  }
  if (*n > 0) {
    plaintext_size_ += *n;
    *progress = true;
  }
  return Status::Ok();
}

Status DevicePump::SendCloseNotifyIfFlushed() {
  if (state_ != PumpState::kClosing || !session_.PendingOutput().empty()) return Status::Ok();
  const Status sent = endpoint_.CloseNotify();
  if (sent == Status::Unavailable()) return Status::Ok();  // after the next ConsumeOutput
  if (!sent.ok()) return Fail(sent, PumpLayer::kTls);
  state_ = PumpState::kClosed;
  return Status::Ok();
}

Status DevicePump::Advance(uint64_t now_us) {
  if (state_ == PumpState::kHandshaking) NODEFL_TRY(FinishHandshake(now_us));
  // Each round moves bytes one step; a round without progress means every
  // buffer on the way is full or empty, and only the socket can change that.
  while (state_ == PumpState::kOpen || state_ == PumpState::kClosing) {
    bool progress = false;
    NODEFL_TRY(EncryptSessionOutput(&progress));
    NODEFL_TRY(DeliverInput(now_us, &progress));
    if (!progress) break;
  }
  return SendCloseNotifyIfFlushed();
}

Status DevicePump::OnReceived(ConstByteSpan ciphertext, uint64_t now_us, size_t* consumed) {
  if (consumed == nullptr) return Status::InvalidArgument();
  *consumed = 0;
  if (state_ == PumpState::kFailed) return status_;
  if (state_ == PumpState::kIdle) return Status::FailedPrecondition();
  if (state_ == PumpState::kClosed) {
    *consumed = ciphertext.size();
    return Status::Ok();
  }
  bool stalled = false;
  while (*consumed < ciphertext.size() && state_ != PumpState::kClosed) {
    size_t fed = 0;
    const Status fed_status = endpoint_.FeedCiphertext(ciphertext.subspan(*consumed), &fed);
    if (!fed_status.ok()) return Fail(fed_status, PumpLayer::kTls);
    *consumed += fed;
    NODEFL_TRY(Advance(now_us));
    // A full inbound buffer that Advance could not drain twice in a row
    // waits for output room.
    if (fed == 0 && stalled) break;
    stalled = fed == 0;
  }
  if (state_ == PumpState::kClosed) *consumed = ciphertext.size();
  if (state_ != PumpState::kOpen) return Status::Ok();
  const Status polled = session_.Poll(now_us);
  if (!polled.ok()) return Fail(polled, PumpLayer::kSession);
  return Advance(now_us);
}

ConstByteSpan DevicePump::PendingOutput() const {
  if (state_ == PumpState::kIdle) return ConstByteSpan();
  return endpoint_.PendingCiphertext();
}

Status DevicePump::ConsumeOutput(size_t count, uint64_t now_us) {
  NODEFL_CHECK(count <= PendingOutput().size());
  endpoint_.ConsumeCiphertext(count);
  if (state_ == PumpState::kFailed) return status_;
  return Advance(now_us);
}

Status DevicePump::Tick(uint64_t now_us) {
  switch (state_) {
    case PumpState::kFailed:
      return status_;
    case PumpState::kIdle:
    case PumpState::kClosed:
      return Status::Ok();
    case PumpState::kHandshaking:
      if (options_.handshake_timeout_us != 0 && now_us - connected_at_us_ > options_.handshake_timeout_us) {
        return Fail(Status::DeadlineExceeded(), PumpLayer::kTls);
      }
      return Advance(now_us);
    case PumpState::kClosing:
      return Advance(now_us);
    case PumpState::kOpen:
      break;
  }
  NODEFL_TRY(Advance(now_us));
  if (state_ != PumpState::kOpen) return Status::Ok();
  const Status polled = session_.Poll(now_us);
  if (!polled.ok()) return Fail(polled, PumpLayer::kSession);
  return Advance(now_us);
}

Status DevicePump::Close(const char* reason) {
  switch (state_) {
    case PumpState::kFailed:
      return status_;
    case PumpState::kClosing:
    case PumpState::kClosed:
      return Status::Ok();
    case PumpState::kIdle:
    case PumpState::kHandshaking:
      // No session on this connection yet: nothing to say goodbye to, and
      // the session's output still belongs to the previous connection.
      state_ = PumpState::kClosed;
      return Status::Ok();
    case PumpState::kOpen:
      break;
  }
  const device::SessionState session_state = session_.state();
  if (session_state == device::SessionState::kReady || session_state == device::SessionState::kAwaitingWelcome) {
    NODEFL_TRY(session_.Close(reason));
  }
  state_ = PumpState::kClosing;
  // Input is dropped from here on, so no clock is needed.
  return Advance(0);
}

}  // namespace nodefl::client
