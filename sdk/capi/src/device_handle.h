// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What a nodefl_device handle holds (nodefl.h): the job's profile, the
// node's DeviceRoles (DRBGs, TLS configuration, session, roles), the
// connection's buffers, the TLS endpoint and the pump that joins it to the
// session, and the C API's own bookkeeping. Internal to sdk/capi.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "nodefl/client/device_pump.h"
#include "nodefl/core/status.h"
#include "nodefl/host/node/device_roles.h"
#include "nodefl/nodefl.h"
#include "nodefl/tls/endpoint.h"

struct nodefl_device {
  // Declared in the order they must be built; members are destroyed in
  // reverse, so the pump goes before the endpoint, the endpoint (which
  // uses the TLS configuration) before the roles, and the roles before the
  // profile they refer to.
  nodefl::host::node::RoleProfile profile;
  std::unique_ptr<nodefl::host::node::DeviceRoles> roles;
  uint8_t tls_in[nodefl::client::kPumpTlsInboundBytes] = {};
  uint8_t tls_out[nodefl::client::kPumpTlsOutboundBytes] = {};
  uint8_t plaintext[nodefl::client::kPumpPlaintextBytes] = {};
  nodefl::tls::TlsEndpoint endpoint;
  std::unique_ptr<nodefl::client::DevicePump> pump;

  // The app said Goodbye itself (nodefl_device_close) on this connection.
  bool app_closed = false;
  // A role failed in Advance: the device cannot take part any more.
  bool roles_failed = false;
  // The handshake of the current connection was counted.
  bool handshake_counted = false;
  uint32_t connections = 0;
  uint32_t handshakes = 0;
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
  char last_error[256] = {};
  // nodefl_config's log_callback and its context (nullptr: stderr).
  void (*log_callback)(void* context, int32_t level, const char* line) = nullptr;
  void* log_context = nullptr;
};

namespace nodefl::capi {

// Copies `text` into the handle's last_error (truncating) and returns `status`.
nodefl_status SetError(nodefl_device* device, nodefl_status status, const char* text);

// What a failed pump call means for the app, with the detail in last_error.
nodefl_status FromPump(nodefl_device* device, Status status);

// Runs `body` (returning nodefl_status) so that nothing thrown crosses the
// C boundary: bad_alloc becomes NODEFL_ERR_NO_MEMORY, anything else
// NODEFL_ERR_INTERNAL, both with a message in `device` when there is one.
template <typename Body>
nodefl_status Guard(nodefl_device* device, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return device != nullptr ? SetError(device, NODEFL_ERR_NO_MEMORY, "out of memory") : NODEFL_ERR_NO_MEMORY;
  } catch (...) {
    return device != nullptr ? SetError(device, NODEFL_ERR_INTERNAL, "unexpected C++ exception inside nodefl")
                             : NODEFL_ERR_INTERNAL;
  }
}

// Overwrites `size` bytes so that the compiler cannot drop the writes.
void Zeroise(void* data, size_t size);

}  // namespace nodefl::capi
