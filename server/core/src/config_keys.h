// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The table of configuration keys (private to the config implementation):
// one row per key with its field and help text, so parsing, --help and
// FormatConfig can never disagree about which keys exist.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "nodefl/server/core/config.h"

namespace nodefl::server::config_internal {

using FieldRef = std::variant<std::string ServerConfig::*, uint16_t ServerConfig::*,
                              uint32_t ServerConfig::*, uint64_t ServerConfig::*, double ServerConfig::*,
                              LogLevel ServerConfig::*, LogFormat ServerConfig::*>;

struct KeySpec {
  std::string_view name;
  FieldRef field;
  std::string_view help;
};

std::span<const KeySpec> Keys();
const KeySpec* FindKey(std::string_view name);

// Parses `text` into the key's field. Returns an error text (without the key
// or location prefix) or an empty string.
std::string ParseInto(const KeySpec& key, std::string_view text, ServerConfig& config);

// The field's value as text, in the form ParseInto accepts.
std::string FormatValue(const KeySpec& key, const ServerConfig& config);

}  // namespace nodefl::server::config_internal
