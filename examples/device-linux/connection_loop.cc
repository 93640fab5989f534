// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "connection_loop.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace nodefl::device_linux {
namespace {

constexpr size_t kReadChunk = 4096;

std::string PumpDetail(client::DevicePump& pump) {
  const char* layer = pump.failure_layer() == client::PumpLayer::kTls ? "tls" : "session";
  std::string detail = std::string(layer) + ": " + pump.status().str();
  const char* tls_text = pump.endpoint().last_error_text();
  if (pump.failure_layer() == client::PumpLayer::kTls && tls_text != nullptr && tls_text[0] != '\0') {
    detail += std::string(" (") + tls_text + ")";
  }
  const char* session_text = pump.session().last_error();
  if (pump.failure_layer() == client::PumpLayer::kSession && session_text != nullptr && session_text[0] != '\0') {
    detail += std::string(" (") + session_text + ")";
  }
  return detail;
}

class Connection {
 public:
  Connection(int fd, client::DevicePump& pump, const ConnectionHooks& hooks)
      : fd_(fd), pump_(pump), hooks_(hooks) {}

  ConnectionOutcome Run(int tick_ms) {
    if (const Status st = pump_.Connect(NowMicros()); !st.ok()) return Failed();
    while (true) {
      if (!Step()) return outcome_;
      if (!WriteOut()) return outcome_;
      if (pump_.state() == client::PumpState::kFailed) return Failed();
      if (pump_.state() == client::PumpState::kClosed && pump_.PendingOutput().empty()) {
        outcome_.end = ConnectionEnd::kClosed;
        outcome_.detail = pump_.peer_closed() ? "the server closed the connection" : "closed";
        return outcome_;
      }
      if (!closing_ && hooks_.want_close && hooks_.want_close()) Close("device closing");
      // Wait for the socket (readable; writable while output waits) or the
      // next tick; never while bytes we hold wait to be fed.
      const bool holding = in_begin_ < in_end_;
      pollfd p{fd_, static_cast<short>((holding ? 0 : POLLIN) | (pump_.PendingOutput().empty() ? 0 : POLLOUT)), 0};
      const int ready = ::poll(&p, 1, holding ? 0 : tick_ms);
      if (ready < 0 && errno != EINTR) return Lost(std::string("poll: ") + std::strerror(errno));
      if (ready > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0) return Lost("socket error");
      if (!holding && ready > 0 && (p.revents & (POLLIN | POLLHUP)) != 0) {
        const ssize_t n = ::recv(fd_, in_, sizeof in_, 0);
        if (n == 0) return Lost("the server closed the TCP connection");
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return Lost(std::string("recv: ") + std::strerror(errno));
        }
        if (n > 0) in_begin_ = 0, in_end_ = static_cast<size_t>(n);
      }
    }
  }

 private:
  // Feeds held input (as much as the pump takes), ticks, runs the hooks.
  bool Step() {
    const uint64_t now = NowMicros();
    if (in_begin_ < in_end_ && pump_.state() != client::PumpState::kFailed &&
        pump_.state() != client::PumpState::kClosed) {
      size_t taken = 0;
      const Status st = pump_.OnReceived(ConstByteSpan(in_ + in_begin_, in_end_ - in_begin_), now, &taken);
      in_begin_ += taken;
      if (!st.ok()) return true;  // kFailed: the caller writes any alert and reports it
    }
    if (pump_.state() == client::PumpState::kHandshaking || pump_.state() == client::PumpState::kOpen ||
        pump_.state() == client::PumpState::kClosing) {
      if (!pump_.Tick(now).ok()) return true;
    }
    if (!outcome_.opened && pump_.handshake_done()) {
      outcome_.opened = true;
      if (hooks_.on_open) hooks_.on_open();
    }
    return AfterStep();
  }

  bool AfterStep() {
    if (!hooks_.after_step) return true;
    const Status st = hooks_.after_step();
    if (!st.ok() && !closing_) {
      after_step_failure_ = st.str();
      Close(after_step_failure_.c_str());
    }
    return true;
  }

  void Close(const char* reason) {
    closing_ = true;
    if (pump_.state() == client::PumpState::kOpen || pump_.state() == client::PumpState::kHandshaking) {
      pump_.Close(reason).IgnoreError();
    }
  }

  // Writes what the pump has for the server until the socket would block.
  // Each write can let the pump encrypt more and roles move: the hooks run
  // before the next write, so a release is recorded before it leaves.
  bool WriteOut() {
    while (true) {
      const ConstByteSpan out = pump_.PendingOutput();
      if (out.empty()) return true;
      const ssize_t n = ::send(fd_, out.data(), out.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
        Lost(std::string("send: ") + std::strerror(errno));
        return false;
      }
      if (pump_.state() == client::PumpState::kFailed) {
        // An alert on its way out: nothing more to account for.
        pump_.ConsumeOutput(static_cast<size_t>(n), NowMicros()).IgnoreError();
        continue;
      }
      if (!pump_.ConsumeOutput(static_cast<size_t>(n), NowMicros()).ok()) return true;
      AfterStep();
    }
  }

  ConnectionOutcome Lost(std::string why) {
    outcome_.end = ConnectionEnd::kLost;
    outcome_.detail = std::move(why);
    return outcome_;
  }

  ConnectionOutcome Failed() {
    outcome_.end = ConnectionEnd::kFailed;
    outcome_.status = pump_.status();
    outcome_.detail = PumpDetail(pump_);
    return outcome_;
  }

  const int fd_;
  client::DevicePump& pump_;
  const ConnectionHooks& hooks_;
  uint8_t in_[kReadChunk];
  size_t in_begin_ = 0, in_end_ = 0;  // received, not yet taken by the pump
  bool closing_ = false;
  std::string after_step_failure_;
  ConnectionOutcome outcome_;
};

}  // namespace

ConnectionOutcome RunConnection(int fd, client::DevicePump& pump, const ConnectionHooks& hooks, int tick_ms) {
  Connection connection(fd, pump, hooks);
  return connection.Run(tick_ms);
}

uint64_t NowMicros() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000u + static_cast<uint64_t>(t.tv_nsec) / 1000u;
}

}  // namespace nodefl::device_linux
