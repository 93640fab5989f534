// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's config file loader (server/core/config.h) on any file: the
// server reads it at start-up, often from a path an operator typed, and
// must answer a broken file with "<file>:<line>: ..." rather than crash or
// half-parse. LoadConfigFile reads the file and hands its text to
// LoadConfigText, which is what this target runs (in memory, so that it
// is not bound by file writes); SetConfigValue, which both use, is fuzzed
// through the reference reading below.
//
// The configuration starts from DefaultServerConfig() plus one small job
// option group of this target's own (a double, a bool, a u32 and a string,
// with a range check and a job name), so keys that live in job groups take
// the same paths as the real jobs' (server/jobs is not linked: it would pull
// in every job's math libraries).
//
// Checked on every input:
//   - LoadConfigText agrees with a one-pass reading of the format its header
//     documents (lines split at '\n', edges trimmed, '#' comment lines,
//     `key = value` with optional "..." around the value, unknown or
//     duplicate keys are errors), applied through SetConfigValue: both
//     accept, with the same resulting configuration, or both refuse, and
//     the loader's message names the file and the line the reading failed on;
//   - an accepted configuration, printed with FormatConfig ("a valid config
//     file") and loaded again from defaults, gives the same configuration
//     and the same ValidateConfig verdict: what the server logs at start-up
//     is what it runs with;
//   - ValidateConfig never crashes, and when it accepts, the documented
//     ranges hold (heartbeat below the idle timeout, frame size 512..16 MiB,
//     queue byte bounds at least one frame, 1..1024 threads, TLS paths set,
//     peer_keys request or directory, job none or one a group provides).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/option_table.h"

namespace {

namespace server = nodefl::server;

void Check(bool ok) {
  if (!ok) std::abort();
}

// A job's options, as server/jobs would register them.
struct FuzzJobOptions {
  double fuzz_rate = 0.5;
  bool fuzz_enabled = false;
  uint32_t fuzz_rounds = 3;
  std::string fuzz_label = "x";
};

constexpr server::OptionSpec<FuzzJobOptions> kFuzzJobSpecs[] = {
    {"fuzz_rate", &FuzzJobOptions::fuzz_rate, "a fraction"},
    {"fuzz_enabled", &FuzzJobOptions::fuzz_enabled, "a switch"},
    {"fuzz_rounds", &FuzzJobOptions::fuzz_rounds, "a count"},
    {"fuzz_label", &FuzzJobOptions::fuzz_label, "a name"},
};

std::string ValidateFuzzJob(const FuzzJobOptions& options, const server::ServerConfig&) {
  if (!(options.fuzz_rate >= 0.0 && options.fuzz_rate <= 1.0)) return "fuzz_rate: outside 0..1";
  return {};
}

bool ProvidesFuzzJob(std::string_view job) { return job == "fuzz-job"; }

server::ServerConfig Base() {
  server::ServerConfig config = server::DefaultServerConfig();
  config.job_options.Add(std::make_unique<server::TableOptionGroup<FuzzJobOptions>>(
      std::span<const server::OptionSpec<FuzzJobOptions>>(kFuzzJobSpecs), &ValidateFuzzJob, &ProvidesFuzzJob));
  return config;
}

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

struct Reading {
  bool ok = true;
  uint64_t bad_line = 0;  // when !ok
};

// The file format as config.h describes it, read from memory.
Reading ReadReference(std::string_view text, server::ServerConfig& config) {
  std::set<std::string, std::less<>> seen;
  uint64_t line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t newline = text.find('\n', at);
    const size_t end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = Trim(text.substr(at, end - at));
    at = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return {false, line_no};
    const std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (key.empty() || !seen.emplace(key).second) return {false, line_no};
    if (!server::SetConfigValue(config, key, value).ok) return {false, line_no};
  }
  return {};
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The ranges ValidateConfig documents, restated.
void CheckValidRanges(const server::ServerConfig& c) {
  Check(!c.listen_address.empty() && !c.tls_ca_cert.empty() && !c.tls_server_cert.empty());
  Check(!c.tls_server_key.empty() && !c.credentials_dir.empty());
  Check(c.max_devices >= 1 && c.job_round_deadline_ms >= 1 && c.max_upload_bytes >= 1);
  Check(c.peer_keys == "request" || c.peer_keys == "directory");
  Check(c.job == "none" || ProvidesFuzzJob(c.job));
  Check(c.idle_timeout_ms >= 1 && c.heartbeat_interval_ms >= 1 && c.heartbeat_interval_ms < c.idle_timeout_ms);
  Check(c.handshake_timeout_ms >= 1 && c.hello_timeout_ms >= 1);
  Check(c.max_frame_bytes >= 512 && c.max_frame_bytes <= (16u << 20));
  Check(c.outbound_queue_messages >= 1 && c.offline_queue_messages >= 1);
  Check(c.outbound_queue_bytes >= c.max_frame_bytes && c.offline_queue_bytes >= c.max_frame_bytes);
  Check(c.relay_memory_bytes >= c.offline_queue_bytes);
  Check(c.threads >= 1 && c.threads <= 1024);
  const auto* group = c.job_options.Find<server::TableOptionGroup<FuzzJobOptions>>();
  Check(group != nullptr && group->values().fuzz_rate >= 0.0 && group->values().fuzz_rate <= 1.0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const server::ServerConfig base = Base();
  static constexpr std::string_view kName = "fuzz.conf";
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  server::ServerConfig loaded = base;
  const server::ConfigStatus status = server::LoadConfigText(text, kName, loaded);
  server::ServerConfig expected = base;
  const Reading reference = ReadReference(text, expected);
  Check(status.ok == reference.ok);
  if (!status.ok) {
    Check(!status.help_requested);
    Check(StartsWith(status.message, std::string(kName) + ":" + std::to_string(reference.bad_line) + ": "));
    return 0;
  }
  const std::string formatted = server::FormatConfig(loaded);
  Check(formatted == server::FormatConfig(expected));

  // What the server prints at start-up must load back to itself.
  server::ServerConfig reloaded = base;
  Check(server::LoadConfigText(formatted, kName, reloaded).ok);
  Check(server::FormatConfig(reloaded) == formatted);

  const server::ConfigStatus valid = server::ValidateConfig(loaded);
  const server::ConfigStatus valid_again = server::ValidateConfig(reloaded);
  Check(valid.ok == valid_again.ok && valid.message == valid_again.message);
  Check(valid.ok == valid.message.empty());
  if (valid.ok) CheckValidRanges(loaded);
  return 0;
}
