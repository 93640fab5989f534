// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The read-only calls (nodefl.h): the connection's state, whether the job
// or the session is over, the privacy ledger's totals and the counters.
// None of them changes the handle, so pending output views stay valid.
#include <algorithm>
#include <cstring>

#include "device_handle.h"

namespace {

using nodefl::client::PumpState;

// Writes the fields of `full` that fit the caller's struct_size (nodefl.h,
// "Versioning"), leaving struct_size as the caller set it.
template <typename T>
nodefl_status WriteOut(const T& full, T* out) {
  if (out == nullptr) return NODEFL_ERR_ARGUMENT;
  const size_t size = out->struct_size;
  if (size < 2 * sizeof(uint32_t)) return NODEFL_ERR_VERSION;
  const size_t n = std::min(size, sizeof full) - sizeof(uint32_t);
  std::memcpy(reinterpret_cast<uint8_t*>(out) + sizeof(uint32_t),
              reinterpret_cast<const uint8_t*>(&full) + sizeof(uint32_t), n);
  return NODEFL_OK;
}

}  // namespace

extern "C" nodefl_state nodefl_device_state(const nodefl_device* d) {
  if (d == nullptr) return NODEFL_STATE_IDLE;
  switch (d->pump->state()) {
    case PumpState::kIdle:
      return NODEFL_STATE_IDLE;
    case PumpState::kHandshaking:
      return NODEFL_STATE_HANDSHAKING;
    case PumpState::kOpen:
      return NODEFL_STATE_OPEN;
    case PumpState::kClosing:
      return NODEFL_STATE_CLOSING;
    case PumpState::kClosed:
      return NODEFL_STATE_CLOSED;
    case PumpState::kFailed:
      return NODEFL_STATE_FAILED;
  }
  return NODEFL_STATE_FAILED;
}

extern "C" int nodefl_device_session_ended(const nodefl_device* d) {
  if (d == nullptr || d->app_closed || d->roles_failed) return 0;
  // A session the server closed (Goodbye, Error) stays closed; a silent
  // server (the idle timeout) also closes it on the device, but a new
  // connection resumes it.
  if (d->roles->session().state() != nodefl::device::SessionState::kClosed) return 0;
  return d->pump->status().code() == nodefl::StatusCode::kDeadlineExceeded ? 0 : 1;
}

extern "C" int nodefl_device_finished(const nodefl_device* d) { return d != nullptr && d->roles->finished() ? 1 : 0; }

extern "C" nodefl_status nodefl_device_ledger(const nodefl_device* d, nodefl_ledger* out) {
  if (d == nullptr) return NODEFL_ERR_ARGUMENT;
  const nodefl::PrivacyLedger& ledger = d->roles->ledger();
  nodefl_ledger full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.unbounded = ledger.unbounded() ? 1 : 0;
  full.epsilon = ledger.total_epsilon();
  full.job_epsilon = ledger.job_epsilon();
  full.job_delta = ledger.job_delta();
  full.lifetime_epsilon = ledger.lifetime_epsilon();
  full.lifetime_delta = ledger.lifetime_delta();
  return WriteOut(full, out);
}

extern "C" nodefl_status nodefl_device_stats(const nodefl_device* d, nodefl_stats* out) {
  if (d == nullptr) return NODEFL_ERR_ARGUMENT;
  const nodefl::host::node::DeviceRoles& roles = *d->roles;
  nodefl_stats full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.connections = d->connections;
  full.handshakes = d->handshakes;
  full.resumed = roles.session().resumed() ? 1 : 0;
  full.bytes_received = d->bytes_received;
  full.bytes_sent = d->bytes_sent;
  const nodefl::device::DeviceSession::Counters& counters = roles.session().counters();
  full.frames_in = counters.frames_in;
  full.frames_out = counters.frames_out;
  full.sends_resent = counters.sends_resent;
  full.arena_bytes = roles.arena_bytes();
  full.echo_sent = roles.echo_role().stats().sent;
  full.echo_received = roles.echo_role().stats().received;
  full.hct_reports = roles.hct_role().stats().reports;
  if (const auto* histograms = roles.histogram_role()) full.histogram_releases = histograms->stats().releases;
  if (const auto* walks = roles.walk_role()) {
    full.walks_started = walks->stats().started;
    full.walks_forwarded = walks->stats().forwarded;
    full.walks_finished = walks->stats().finished;
    full.walks_dropped = walks->stats().dropped;
  }
  if (const auto* compares = roles.compare_role()) {
    full.compare_done = compares->stats().done;
    full.compare_aborted = compares->stats().aborted;
  }
  if (const auto* train = roles.train_role()) full.train_epochs = train->stats().epochs;
  return WriteOut(full, out);
}

extern "C" const char* nodefl_device_last_error(const nodefl_device* d) {
  return d != nullptr ? d->last_error : "no device (NULL handle)";
}
