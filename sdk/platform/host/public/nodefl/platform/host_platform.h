// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The reference port for Linux hosts (x86-64 servers, ARM boards running
// Linux, Android/iOS apps that can call POSIX): getrandom(2) for entropy,
// stderr for logs. A microcontroller port writes the same two functions
// against its TRNG and UART. Time is the app's: it passes `now_us` to the
// SDK calls that need it (platform.h says why).
#pragma once

#include "nodefl/platform/platform.h"

namespace nodefl::host {

Platform MakeHostPlatform(LogLevel min_log_level = LogLevel::kInfo);

Status HostEntropyFill(void* context, Span<uint8_t> out);
// `context` may be a `const char*` prefix printed before each line (e.g. a
// device id in the emulator) or nullptr.
void HostStderrLog(void* context, LogLevel level, const char* line);

}  // namespace nodefl::host
