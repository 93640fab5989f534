// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "nodefl/platform/platform.h"

namespace nodefl {

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "?";
}

void LogSink::Log(LogLevel level, const char* format, ...) const {
  if (write == nullptr || level < min_level) return;
  // Sized for a one-line event; long lines are cut, never allocated.
  char line[160];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  if (n < 0) return;
  if (static_cast<size_t>(n) >= sizeof(line)) std::memcpy(line + sizeof(line) - 4, "...", 4);
  write(context, level, line);
}

}  // namespace nodefl
