// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The main-loop calls (nodefl.h, "The main loop"): each drives the SDK's
// client::DevicePump one step, then lets the roles hand results between a
// job's stages (DeviceRoles::Advance) before the app writes that step's
// output, as the board client does after every step.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "device_handle.h"

namespace nodefl::capi {
namespace {

using client::PumpState;

// After every step: count a finished handshake and advance the roles. A
// role failure ends the device's part: it says Goodbye with the reason and
// every later connect is refused.
nodefl_status AfterStep(nodefl_device* d, nodefl_status step) {
  if (!d->handshake_counted && d->pump->handshake_done()) {
    d->handshake_counted = true;
    ++d->handshakes;
  }
  if (d->roles_failed) return step;
  const Status advanced = d->roles->Advance();
  if (advanced.ok()) return step;
  d->roles_failed = true;
  char text[160];
  std::snprintf(text, sizeof text, "roles: %s (the device cannot take part in the rest of job %s)", advanced.str(),
                d->profile.job.c_str());
  if (d->pump->state() == PumpState::kOpen) d->pump->Close("device roles failed").IgnoreError();
  return SetError(d, NODEFL_ERR_ROLES, text);
}

nodefl_status NoDevice() { return NODEFL_ERR_ARGUMENT; }

}  // namespace
}  // namespace nodefl::capi

using nodefl::ConstByteSpan;
using nodefl::capi::AfterStep;
using nodefl::capi::FromPump;
using nodefl::capi::Guard;
using nodefl::capi::SetError;

extern "C" nodefl_status nodefl_device_connect(nodefl_device* d, uint64_t now_us) {
  if (d == nullptr) return nodefl::capi::NoDevice();
  return Guard(d, [&]() -> nodefl_status {
    if (d->roles_failed) {
      return SetError(d, NODEFL_ERR_STATE, "the device's roles failed: it cannot take part in this job any more");
    }
    d->last_error[0] = '\0';
    d->app_closed = false;
    d->handshake_counted = false;
    ++d->connections;
    return AfterStep(d, FromPump(d, d->pump->Connect(now_us)));
  });
}

extern "C" nodefl_status nodefl_device_receive(nodefl_device* d, const uint8_t* data, size_t size, uint64_t now_us,
                                               size_t* consumed) {
  if (d == nullptr) return nodefl::capi::NoDevice();
  if (consumed == nullptr) return SetError(d, NODEFL_ERR_ARGUMENT, "nodefl_device_receive: consumed is NULL");
  *consumed = 0;
  if (data == nullptr && size != 0) return SetError(d, NODEFL_ERR_ARGUMENT, "nodefl_device_receive: data is NULL");
  return Guard(d, [&]() -> nodefl_status {
    const nodefl_status st = FromPump(d, d->pump->OnReceived(ConstByteSpan(data, size), now_us, consumed));
    d->bytes_received += *consumed;
    return AfterStep(d, st);
  });
}

extern "C" nodefl_status nodefl_device_pending_output(const nodefl_device* d, const uint8_t** data, size_t* size) {
  if (d == nullptr || data == nullptr || size == nullptr) return NODEFL_ERR_ARGUMENT;
  const ConstByteSpan out = d->pump->PendingOutput();
  *data = out.data();
  *size = out.size();
  return NODEFL_OK;
}

extern "C" size_t nodefl_device_copy_output(const nodefl_device* d, uint8_t* buffer, size_t capacity) {
  if (d == nullptr || buffer == nullptr) return 0;
  const ConstByteSpan out = d->pump->PendingOutput();
  const size_t n = std::min(out.size(), capacity);
  if (n != 0) std::memcpy(buffer, out.data(), n);
  return n;
}

extern "C" nodefl_status nodefl_device_consume_output(nodefl_device* d, size_t count, uint64_t now_us) {
  if (d == nullptr) return nodefl::capi::NoDevice();
  const size_t pending = d->pump->PendingOutput().size();
  if (count > pending) {
    char text[128];
    std::snprintf(text, sizeof text, "nodefl_device_consume_output: %zu bytes consumed, only %zu pending", count,
                  pending);
    return SetError(d, NODEFL_ERR_ARGUMENT, text);
  }
  return Guard(d, [&]() -> nodefl_status {
    d->bytes_sent += count;
    return AfterStep(d, FromPump(d, d->pump->ConsumeOutput(count, now_us)));
  });
}

extern "C" nodefl_status nodefl_device_tick(nodefl_device* d, uint64_t now_us) {
  if (d == nullptr) return nodefl::capi::NoDevice();
  return Guard(d, [&]() -> nodefl_status { return AfterStep(d, FromPump(d, d->pump->Tick(now_us))); });
}

extern "C" nodefl_status nodefl_device_close(nodefl_device* d, const char* reason) {
  if (d == nullptr) return nodefl::capi::NoDevice();
  return Guard(d, [&]() -> nodefl_status {
    const nodefl_status st = FromPump(d, d->pump->Close(reason != nullptr ? reason : "device closing"));
    if (st == NODEFL_OK) d->app_closed = true;
    return st;
  });
}
