// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The table of configuration keys (private to the config implementation):
// one row per key with its field and help text, so parsing, --help and
// FormatConfig can never disagree about which keys exist.
#pragma once

#include <span>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/option_table.h"

namespace nodefl::server::config_internal {

using KeySpec = OptionSpec<ServerConfig>;

// The server's own keys (jobs add theirs through ServerConfig::job_options).
std::span<const KeySpec> Keys();

}  // namespace nodefl::server::config_internal
