// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/config.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "config_keys.h"

namespace nodefl::server {
namespace {

using config_internal::Keys;
using config_internal::KeySpec;

// A key is the server's own (spec) or option `index` of a job's group.
struct KeyRef {
  const KeySpec* spec = nullptr;
  OptionGroup* group = nullptr;
  size_t index = 0;
  explicit operator bool() const { return spec != nullptr || group != nullptr; }
};

KeyRef FindKey(ServerConfig& config, std::string_view name) {
  for (const KeySpec& key : Keys()) {
    if (key.name == name) return {&key, nullptr, 0};
  }
  for (size_t g = 0; g < config.job_options.size(); ++g) {
    OptionGroup& group = config.job_options[g];
    for (size_t i = 0; i < group.size(); ++i) {
      if (group.key(i) == name) return {nullptr, &group, i};
    }
  }
  return {};
}

std::string_view Trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A value may be wrapped in double quotes to keep leading/trailing spaces.
std::string_view Unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// Flags accept dashes for underscores: --idle-timeout-ms == --idle_timeout_ms.
std::string NormaliseFlagName(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

struct Flag {
  std::string name;  // normalised, without "--"
  std::string value;
};

constexpr uint32_t kMinFrameBytes = 512;
constexpr uint32_t kMaxFrameBytesLimit = 16u << 20;
constexpr uint32_t kMaxThreads = 1024;

}  // namespace

ServerConfig DefaultServerConfig() {
  ServerConfig config;
  config.threads = std::max(1u, std::thread::hardware_concurrency());
  return config;
}

ConfigStatus SetConfigValue(ServerConfig& config, std::string_view key, std::string_view value) {
  const KeyRef ref = FindKey(config, key);
  if (!ref) return ConfigStatus::Error("unknown key '" + std::string(key) + "'");
  const std::string problem = ref.spec != nullptr ? ParseOption(*ref.spec, value, config)
                                                  : ref.group->Set(ref.index, value);
  if (!problem.empty()) return ConfigStatus::Error(std::string(key) + ": " + problem);
  return ConfigStatus::Ok();
}

ConfigStatus LoadConfigText(std::string_view text, std::string_view name, ServerConfig& config) {
  std::map<std::string, uint64_t, std::less<>> first_line_of_key;
  uint64_t line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t newline = text.find('\n', at);
    const size_t end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = Trim(text.substr(at, end - at));
    at = end + 1;
    ++line_no;
    const std::string where = std::string(name) + ":" + std::to_string(line_no) + ": ";
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return ConfigStatus::Error(where + "expected 'key = value'");
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value = Unquote(Trim(line.substr(eq + 1)));
    if (key.empty()) return ConfigStatus::Error(where + "missing key before '='");
    if (!FindKey(config, key)) {
      return ConfigStatus::Error(where + "unknown key '" + std::string(key) + "'");
    }
    // A key set twice in one file is almost always an editing mistake.
    const auto [it, inserted] = first_line_of_key.emplace(std::string(key), line_no);
    if (!inserted) {
      return ConfigStatus::Error(where + "duplicate key '" + std::string(key) +
                                 "' (first set on line " + std::to_string(it->second) + ")");
    }
    ConfigStatus status = SetConfigValue(config, key, value);
    if (!status.ok) return ConfigStatus::Error(where + status.message);
  }
  return ConfigStatus::Ok();
}

ConfigStatus LoadConfigFile(const std::filesystem::path& path, ServerConfig& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigStatus::Error(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ConfigStatus::Error(path.string() + ": read error");
  return LoadConfigText(text.str(), path.string(), config);
}

ConfigStatus ApplyFlags(int argc, const char* const* argv, ServerConfig& config) {
  // Pass 1: split into flags, reject what cannot be a flag, spot --help.
  std::vector<Flag> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i] == nullptr ? "" : argv[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return ConfigStatus::Error("'" + std::string(arg) + "': expected --key value");
    }
    const std::string_view body = arg.substr(2);
    const size_t eq = body.find('=');
    Flag flag{NormaliseFlagName(body.substr(0, eq)), {}};
    if (flag.name == "help") {
      ConfigStatus status;
      status.help_requested = true;
      return status;
    }
    if (flag.name != "config" && !FindKey(config, flag.name)) {
      return ConfigStatus::Error("--" + flag.name + ": unknown flag");
    }
    if (eq != std::string_view::npos) {
      flag.value.assign(body.substr(eq + 1));
    } else if (i + 1 < argc && argv[i + 1] != nullptr &&
               std::string_view(argv[i + 1]).substr(0, 2) != "--") {
      flag.value.assign(argv[++i]);
    } else {
      // "--key --other" would otherwise swallow the next flag as a value;
      // a value that starts with "--" can still be given as --key=--value.
      return ConfigStatus::Error("--" + flag.name + ": missing value");
    }
    flags.push_back(std::move(flag));
  }
  // Pass 2: files first, wherever --config appeared, so flags override them.
  for (const Flag& flag : flags) {
    if (flag.name != "config") continue;
    ConfigStatus status = LoadConfigFile(flag.value, config);
    if (!status.ok) return status;
  }
  // Pass 3: every other flag, in order (a repeated flag: the last one wins).
  for (const Flag& flag : flags) {
    if (flag.name == "config") continue;
    ConfigStatus status = SetConfigValue(config, flag.name, flag.value);
    if (!status.ok) return ConfigStatus::Error("--" + status.message);
  }
  return ConfigStatus::Ok();
}

ConfigStatus ValidateConfig(const ServerConfig& c) {
  const auto fail = [](std::string_view key, const std::string& what) {
    return ConfigStatus::Error(std::string(key) + ": " + what);
  };
  if (c.listen_address.empty()) return fail("listen_address", "must not be empty");
  if (c.tls_ca_cert.empty()) return fail("tls_ca_cert", "required (PEM file of the deployment CA)");
  if (c.tls_server_cert.empty()) {
    return fail("tls_server_cert", "required (PEM file of the server certificate)");
  }
  if (c.tls_server_key.empty()) {
    return fail("tls_server_key", "required (PEM file of the server private key)");
  }
  if (c.credentials_dir.empty()) {
    return fail("credentials_dir", "required (folder of device-<id>.crt files)");
  }
  if (c.max_devices == 0) return fail("max_devices", "must be at least 1");
  if (c.job != "none") {
    bool known = false;
    for (size_t g = 0; g < c.job_options.size() && !known; ++g) known = c.job_options[g].ProvidesJob(c.job);
    if (!known) return fail("job", "'" + c.job + "' is not a known job");
  }
  if (c.job_round_deadline_ms == 0) return fail("job_round_deadline_ms", "must be at least 1");
  if (c.max_upload_bytes == 0) return fail("max_upload_bytes", "must be at least 1");
  if (c.relay_journal_ms == 0 || c.relay_journal_ms > 60000) {
    return fail("relay_journal_ms", "must be from 1 to 60000");
  }
  if (c.peer_keys != "request" && c.peer_keys != "directory") {
    return fail("peer_keys", "'" + c.peer_keys + "' is not request or directory");
  }
  if (c.idle_timeout_ms == 0) return fail("idle_timeout_ms", "must be at least 1");
  if (c.heartbeat_interval_ms == 0) return fail("heartbeat_interval_ms", "must be at least 1");
  if (c.heartbeat_interval_ms >= c.idle_timeout_ms) {
    // Otherwise a healthy but quiet device would be closed between heartbeats.
    return fail("heartbeat_interval_ms", std::to_string(c.heartbeat_interval_ms) +
                                             " must be below idle_timeout_ms (" +
                                             std::to_string(c.idle_timeout_ms) + ")");
  }
  if (c.handshake_timeout_ms == 0) return fail("handshake_timeout_ms", "must be at least 1");
  if (c.hello_timeout_ms == 0) return fail("hello_timeout_ms", "must be at least 1");
  if (c.max_frame_bytes < kMinFrameBytes || c.max_frame_bytes > kMaxFrameBytesLimit) {
    return fail("max_frame_bytes", std::to_string(c.max_frame_bytes) + " is outside " +
                                       std::to_string(kMinFrameBytes) + ".." +
                                       std::to_string(kMaxFrameBytesLimit));
  }
  if (c.outbound_queue_messages == 0) return fail("outbound_queue_messages", "must be at least 1");
  if (c.offline_queue_messages == 0) return fail("offline_queue_messages", "must be at least 1");
  // A byte bound below one frame would refuse every message.
  const auto frame = std::to_string(c.max_frame_bytes);
  if (c.outbound_queue_bytes < c.max_frame_bytes) {
    return fail("outbound_queue_bytes", "must be at least max_frame_bytes (" + frame + ")");
  }
  if (c.offline_queue_bytes < c.max_frame_bytes) {
    return fail("offline_queue_bytes", "must be at least max_frame_bytes (" + frame + ")");
  }
  if (c.relay_memory_bytes < c.offline_queue_bytes) {
    return fail("relay_memory_bytes", "must be at least offline_queue_bytes (" +
                                          std::to_string(c.offline_queue_bytes) + ")");
  }
  if (c.threads == 0 || c.threads > kMaxThreads) {
    return fail("threads", std::to_string(c.threads) + " is outside 1.." + std::to_string(kMaxThreads));
  }
  for (size_t g = 0; g < c.job_options.size(); ++g) {
    const std::string problem = c.job_options[g].Validate(c);
    if (!problem.empty()) return ConfigStatus::Error(problem);
  }
  return ConfigStatus::Ok();
}

std::string ConfigHelpText(const ServerConfig& defaults) {
  size_t width = std::string_view("--config FILE").size();
  for (const KeySpec& key : Keys()) width = std::max(width, key.name.size() + 2);
  for (size_t g = 0; g < defaults.job_options.size(); ++g) {
    const OptionGroup& group = defaults.job_options[g];
    for (size_t i = 0; i < group.size(); ++i) width = std::max(width, group.key(i).size() + 2);
  }
  const auto row = [&](std::string_view left, std::string_view help, const std::string& def) {
    std::string line = "  ";
    line += left;
    line.append(width + 2 - left.size(), ' ');
    line += help;
    if (!def.empty()) line += " (default: " + def + ")";
    return line + "\n";
  };
  std::string text =
      "Options (each key can also be set in a config file as 'key = value';\n"
      "flags override the file; --key=value and dashes for underscores work too):\n";
  text += row("--config FILE", "load keys from FILE first", "");
  text += row("--help", "print this help and exit", "");
  for (const KeySpec& key : Keys()) {
    const std::string def = FormatOption(key, defaults);
    // Keys without a default are the required paths; their help says so.
    text += row("--" + std::string(key.name), key.help, def);
  }
  for (size_t g = 0; g < defaults.job_options.size(); ++g) {
    const OptionGroup& group = defaults.job_options[g];
    for (size_t i = 0; i < group.size(); ++i) {
      text += row("--" + std::string(group.key(i)), group.help(i), group.Default(i));
    }
  }
  return text;
}

std::string ConfigHelpText() { return ConfigHelpText(DefaultServerConfig()); }

std::string FormatConfig(const ServerConfig& config) {
  std::string text;
  const auto line = [&text](std::string_view key, const std::string& value) {
    // Trim() would eat edge whitespace (every character it trims, '\r'
    // included) and Unquote() a leading quote pair.
    const auto edge = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"'; };
    const bool needs_quotes = !value.empty() && (edge(value.front()) || edge(value.back()));
    text += std::string(key) + " = " + (needs_quotes ? "\"" + value + "\"" : value) + "\n";
  };
  for (const KeySpec& key : Keys()) line(key.name, FormatOption(key, config));
  for (size_t g = 0; g < config.job_options.size(); ++g) {
    const OptionGroup& group = config.job_options[g];
    for (size_t i = 0; i < group.size(); ++i) line(group.key(i), group.Get(i));
  }
  return text;
}

}  // namespace nodefl::server
