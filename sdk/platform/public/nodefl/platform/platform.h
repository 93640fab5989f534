// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The porting layer: the only things the device core needs from the world it
// runs in. A port fills a Platform with plain function pointers plus a context
// pointer (no virtual calls, no globals), so ten thousand emulated devices in
// one process can each have their own log, and a Cortex-M port can point
// entropy at its TRNG peripheral.
//
// Time is deliberately not a hook: the app (or port) owns the clock and
// passes `now_us` into every call that needs it (DeviceSession::Poll, ...).
// A core that read a clock itself would stop being a pure state machine;
// with time as an argument, tests step it by hand and the emulator drives
// thousands of devices from one event loop.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl {

// Fills `out` completely with bytes from a true entropy source, or fails.
// Used only to seed the DRBG (random/drbg.h); never read directly by
// mechanisms.
struct EntropySource {
  Status (*fill)(void* context, Span<uint8_t> out) = nullptr;
  void* context = nullptr;

  Status Fill(Span<uint8_t> out) const {
    if (fill == nullptr) return Status::FailedPrecondition();
    return fill(context, out);
  }
};

enum class LogLevel : uint8_t { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

const char* LogLevelName(LogLevel level);

// Receives one finished, NUL-terminated line (no trailing newline). The core
// formats into a fixed stack buffer and truncates long lines with "...".
struct LogSink {
  void (*write)(void* context, LogLevel level, const char* line) = nullptr;
  void* context = nullptr;
  LogLevel min_level = LogLevel::kInfo;

  // printf-style; does nothing without a sink or below `min_level`.
  void Log(LogLevel level, const char* format, ...) const __attribute__((format(printf, 3, 4)));
};

struct Platform {
  EntropySource entropy;
  LogSink log;
};

}  // namespace nodefl
