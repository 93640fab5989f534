// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <charconv>
#include <limits>

#include "nodefl/server/core/option_table.h"

namespace nodefl::server {
namespace {

template <typename T>
std::string ParseUnsigned(std::string_view text, T* out) {
  uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    return "'" + std::string(text) + "' is not a non-negative integer";
  }
  if (ec == std::errc::result_out_of_range || value > std::numeric_limits<T>::max()) {
    return "'" + std::string(text) + "' is out of range (0.." + std::to_string(std::numeric_limits<T>::max()) + ")";
  }
  *out = static_cast<T>(value);
  return {};
}

}  // namespace

std::string ParseOptionValue(std::string_view text, std::string* out) {
  out->assign(text);
  return {};
}

std::string ParseOptionValue(std::string_view text, bool* out) {
  if (text == "true") {
    *out = true;
  } else if (text == "false") {
    *out = false;
  } else {
    return "'" + std::string(text) + "' is not true or false";
  }
  return {};
}

std::string ParseOptionValue(std::string_view text, uint16_t* out) { return ParseUnsigned(text, out); }
std::string ParseOptionValue(std::string_view text, uint32_t* out) { return ParseUnsigned(text, out); }
std::string ParseOptionValue(std::string_view text, uint64_t* out) { return ParseUnsigned(text, out); }

std::string ParseOptionValue(std::string_view text, double* out) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return "'" + std::string(text) + "' is not a number";
  }
  *out = value;
  return {};
}

std::string ParseOptionValue(std::string_view text, LogLevel* out) {
  if (ParseLogLevel(text, out)) return {};
  return "'" + std::string(text) + "' is not one of debug, info, warn, error";
}

std::string ParseOptionValue(std::string_view text, LogFormat* out) {
  if (ParseLogFormat(text, out)) return {};
  return "'" + std::string(text) + "' is not one of logfmt, json";
}

std::string FormatOptionValue(const std::string& value) { return value; }
std::string FormatOptionValue(bool value) { return value ? "true" : "false"; }
std::string FormatOptionValue(uint16_t value) { return std::to_string(value); }
std::string FormatOptionValue(uint32_t value) { return std::to_string(value); }
std::string FormatOptionValue(uint64_t value) { return std::to_string(value); }

std::string FormatOptionValue(double value) {
  char buffer[32];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, ptr) : std::string("nan");
}

std::string FormatOptionValue(LogLevel value) { return std::string(LogLevelName(value)); }
std::string FormatOptionValue(LogFormat value) { return std::string(LogFormatName(value)); }

}  // namespace nodefl::server
