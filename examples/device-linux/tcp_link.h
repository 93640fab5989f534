// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The board's TCP connection to the server: a non-blocking POSIX socket,
// nothing more (TLS and the protocol are the SDK's, in client::DevicePump).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nodefl::device_linux {

// Resolves HOST (a name or an address) and connects to PORT within
// `timeout_ms`: a connected non-blocking socket with TCP_NODELAY, or -1
// with *error set.
int ConnectTcp(const std::string& host, uint16_t port, int timeout_ms, std::string* error);

// "HOST:PORT" (HOST may be "[v6addr]"); false if it is not that.
bool SplitHostPort(const std::string& text, std::string* host, uint16_t* port);

}  // namespace nodefl::device_linux
