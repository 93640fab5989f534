// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/log.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>

namespace nodefl::server {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes
// there are not one (overlong forms, surrogates and code points above
// U+10FFFF count as invalid, as RFC 3629 says).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len = 0;
  uint32_t min_code = 0;
  uint32_t code = 0;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, min_code = 0x80, code = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min_code = 0x800, code = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min_code = 0x10000, code = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return len;
}

void AppendKey(std::string& out, std::string_view key) {
  if (key.empty()) {
    out += '_';
    return;
  }
  for (char c : key) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '.' || c == '-';
    out += plain ? c : '_';
  }
}

// logfmt: bare if the value is non-empty printable ASCII without space, '=',
// '"' or '\\'; otherwise quoted with escapes.
bool LogfmtNeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '=' || c == '"' || c == '\\') return true;
  }
  return false;
}

void AppendLogfmtString(std::string& out, std::string_view s) {
  if (!LogfmtNeedsQuotes(s)) {
    out += s;
    return;
  }
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    } else if (u >= 0x80) {
      // Valid UTF-8 text stays readable; stray bytes become \xNN.
      const size_t len = Utf8SequenceLength(s, i);
      if (len == 0) {
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 0xF];
      } else {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
    } else {
      out += c;
    }
    ++i;
  }
  out += '"';
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xF];
        } else if (u >= 0x80) {
          const size_t len = Utf8SequenceLength(s, i);
          if (len == 0) {
            out += "\\ufffd";  // JSON text must be valid UTF-8
          } else {
            out.append(s.substr(i, len));
            i += len;
            continue;
          }
        } else {
          out += c;
        }
    }
    ++i;
  }
  out += '"';
}

template <typename T>
void AppendNumber(std::string& out, T v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, ec == std::errc() ? end : buf);
}

void AppendValue(std::string& out, const LogValue& value, LogFormat format) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          if (format == LogFormat::kJson) {
            AppendJsonString(out, v);
          } else {
            AppendLogfmtString(out, v);
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isfinite(v)) {
            AppendNumber(out, v);  // shortest text that reads back exactly
          } else if (format == LogFormat::kJson) {
            out += "null";  // JSON has no NaN or infinities
          } else {
            out += std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
          }
        } else {
          AppendNumber(out, v);
        }
      },
      value.value());
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

std::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "logfmt";
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  for (LogLevel candidate : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == LogLevelName(candidate)) {
      *level = candidate;
      return true;
    }
  }
  return false;
}

bool ParseLogFormat(std::string_view text, LogFormat* format) {
  for (LogFormat candidate : {LogFormat::kLogfmt, LogFormat::kJson}) {
    if (text == LogFormatName(candidate)) {
      *format = candidate;
      return true;
    }
  }
  return false;
}

Logger::Logger(LogLevel level, LogFormat format, std::FILE* out)
    : level_(level), format_(format), out_(out) {}

std::string Logger::FormatLine(std::string_view timestamp, LogLevel level, std::string_view event,
                               LogFields fields) const {
  std::string line;
  line.reserve(96 + 24 * fields.size());
  if (format_ == LogFormat::kJson) {
    line += "{\"ts\":";
    AppendJsonString(line, timestamp);
    line += ",\"level\":";
    AppendJsonString(line, LogLevelName(level));
    line += ",\"event\":";
    AppendJsonString(line, event);
    for (const LogField& field : fields) {
      // Keys are sanitised first so a JSON key never needs escaping.
      std::string key;
      AppendKey(key, field.key);
      line += ',';
      AppendJsonString(line, key);
      line += ':';
      AppendValue(line, field.value, format_);
    }
    line += "}\n";
  } else {
    line += "ts=";
    AppendLogfmtString(line, timestamp);
    line += " level=";
    line += LogLevelName(level);
    line += " event=";
    AppendLogfmtString(line, event);
    for (const LogField& field : fields) {
      line += ' ';
      AppendKey(line, field.key);
      line += '=';
      AppendValue(line, field.value, format_);
    }
    line += '\n';
  }
  return line;
}

void Logger::Log(LogLevel level, std::string_view event, LogFields fields) {
  if (!Enabled(level) || out_ == nullptr) return;
  const std::string line = FormatLine(LogTimestampNow(), level, event, fields);
  std::lock_guard<std::mutex> lock(write_mutex_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);  // a crash must not lose the lines that explain it
}

std::string LogTimestampNow() {
  const auto now = std::chrono::system_clock::now();
  const auto since_epoch = now.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch - seconds);
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[64];  // roomy enough that the compiler can prove no truncation
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long>(micros.count()));
  return buf;
}

}  // namespace nodefl::server
