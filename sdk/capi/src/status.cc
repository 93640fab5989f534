// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The C API's version, its status texts, and how the C++ side's failures
// become a nodefl_status with a one-line message.
#include <cstdio>
#include <cstring>

#include "device_handle.h"
#include "mbedtls/platform_util.h"

extern "C" uint32_t nodefl_capi_version(void) { return NODEFL_CAPI_VERSION; }

extern "C" const char* nodefl_status_text(nodefl_status status) {
  switch (status) {
    case NODEFL_OK:
      return "ok";
    case NODEFL_ERR_ARGUMENT:
      return "invalid argument";
    case NODEFL_ERR_VERSION:
      return "unsupported struct version";
    case NODEFL_ERR_CREDENTIALS:
      return "unusable credentials";
    case NODEFL_ERR_NO_MEMORY:
      return "out of memory";
    case NODEFL_ERR_STATE:
      return "not possible in this state";
    case NODEFL_ERR_AGAIN:
      return "no room yet: write the pending output and call again";
    case NODEFL_ERR_TLS:
      return "TLS failure";
    case NODEFL_ERR_SESSION:
      return "session failure";
    case NODEFL_ERR_TIMEOUT:
      return "timed out";
    case NODEFL_ERR_ROLES:
      return "the job's roles failed";
    case NODEFL_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

namespace nodefl::capi {

nodefl_status SetError(nodefl_device* device, nodefl_status status, const char* text) {
  std::snprintf(device->last_error, sizeof device->last_error, "%s", text != nullptr ? text : "");
  return status;
}

nodefl_status FromPump(nodefl_device* device, Status status) {
  if (status.ok()) return NODEFL_OK;
  client::DevicePump& pump = *device->pump;
  if (pump.state() != client::PumpState::kFailed) {
    // Refusals that leave the connection as it was.
    char text[96];
    std::snprintf(text, sizeof text, "refused in state %s (%s)", client::PumpStateName(pump.state()), status.str());
    if (status.code() == StatusCode::kFailedPrecondition) return SetError(device, NODEFL_ERR_STATE, text);
    if (status.code() == StatusCode::kResourceExhausted) return SetError(device, NODEFL_ERR_AGAIN, text);
    if (status.code() == StatusCode::kInvalidArgument) return SetError(device, NODEFL_ERR_ARGUMENT, text);
    return SetError(device, NODEFL_ERR_INTERNAL, text);
  }
  // The connection failed: say which layer and why, as the board client does.
  const bool tls = pump.failure_layer() == client::PumpLayer::kTls;
  const char* detail = tls ? pump.endpoint().last_error_text() : pump.session().last_error();
  const bool has_detail = detail != nullptr && detail[0] != '\0';
  std::snprintf(device->last_error, sizeof device->last_error, "%s: %s%s%s%s", tls ? "tls" : "session",
                status.str(), has_detail ? " (" : "", has_detail ? detail : "", has_detail ? ")" : "");
  if (status.code() == StatusCode::kDeadlineExceeded) return NODEFL_ERR_TIMEOUT;
  return tls ? NODEFL_ERR_TLS : NODEFL_ERR_SESSION;
}

void Zeroise(void* data, size_t size) { mbedtls_platform_zeroize(data, size); }

}  // namespace nodefl::capi
