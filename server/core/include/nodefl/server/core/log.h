// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Structured logging for the server: one line per event, either logfmt
//   ts=2024-05-01T12:00:00.123456Z level=info event=device_registered device=12 peer=127.0.0.1:5555
// or JSON lines
//   {"ts":"2024-05-01T12:00:00.123456Z","level":"info","event":"device_registered","device":12,...}
// Values are integers, doubles, booleans or strings. Strings are quoted and
// escaped so that a peer-controlled value (a software name, an error text)
// can never forge a field or a line: logfmt quotes any value with spaces,
// '=', '"', control or non-ASCII bytes and escapes them (\" \\ \n \t \r,
// \xNN for other control or invalid UTF-8 bytes); JSON escapes per RFC 8259
// and replaces invalid UTF-8 with U+FFFD. Keys are code constants; any byte
// outside [A-Za-z0-9_.-] in a key becomes '_'.
//
// Thread safety: Log() builds the line without locks and writes it with one
// fwrite under a mutex, so lines from many threads never interleave.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>

namespace nodefl::server {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };
enum class LogFormat : uint8_t { kLogfmt, kJson };

std::string_view LogLevelName(LogLevel level);    // "debug", "info", "warn", "error"
std::string_view LogFormatName(LogFormat format);  // "logfmt", "json"
bool ParseLogLevel(std::string_view text, LogLevel* level);
bool ParseLogFormat(std::string_view text, LogFormat* format);

// One field value. Strings are held as views: a LogField lives only for the
// Log() call it is passed to, so temporaries in the call are fine.
class LogValue {
 public:
  template <std::signed_integral T>
  LogValue(T v) : value_(static_cast<int64_t>(v)) {}  // NOLINT: implicit on purpose
  template <std::unsigned_integral T>
    requires(!std::same_as<T, bool>)
  LogValue(T v) : value_(static_cast<uint64_t>(v)) {}  // NOLINT
  LogValue(bool v) : value_(v) {}                      // NOLINT
  LogValue(double v) : value_(v) {}                    // NOLINT
  LogValue(const char* v) : value_(std::string_view(v == nullptr ? "" : v)) {}  // NOLINT
  LogValue(std::string_view v) : value_(v) {}                                   // NOLINT
  LogValue(const std::string& v) : value_(std::string_view(v)) {}               // NOLINT

  using Variant = std::variant<int64_t, uint64_t, double, bool, std::string_view>;
  const Variant& value() const { return value_; }

 private:
  Variant value_;
};

struct LogField {
  std::string_view key;
  LogValue value;
};

using LogFields = std::initializer_list<LogField>;

class Logger {
 public:
  // `out` is not owned and must outlive the logger.
  explicit Logger(LogLevel level = LogLevel::kInfo, LogFormat format = LogFormat::kLogfmt,
                  std::FILE* out = stderr);

  void Log(LogLevel level, std::string_view event, LogFields fields = {});
  void Debug(std::string_view event, LogFields fields = {}) { Log(LogLevel::kDebug, event, fields); }
  void Info(std::string_view event, LogFields fields = {}) { Log(LogLevel::kInfo, event, fields); }
  void Warn(std::string_view event, LogFields fields = {}) { Log(LogLevel::kWarn, event, fields); }
  void Error(std::string_view event, LogFields fields = {}) { Log(LogLevel::kError, event, fields); }

  bool Enabled(LogLevel level) const { return level >= level_.load(std::memory_order_relaxed); }
  void set_level(LogLevel level) { level_.store(level, std::memory_order_relaxed); }
  LogFormat format() const { return format_; }

  // The line Log() would write (with '\n'), for a given timestamp text.
  std::string FormatLine(std::string_view timestamp, LogLevel level, std::string_view event,
                         LogFields fields) const;

 private:
  std::atomic<LogLevel> level_;
  const LogFormat format_;
  std::FILE* const out_;
  std::mutex write_mutex_;
};

// Current UTC time as RFC 3339 with microseconds: 2024-05-01T12:00:00.123456Z.
std::string LogTimestampNow();

}  // namespace nodefl::server
