// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ServerConfig: every tunable of the coordination server, with its default.
// Sources, later ones winning:
//   1. the defaults below,
//   2. a config file (`key = value` lines, `#` starts a comment line),
//   3. command-line flags: every key is also `--key value` (or `--key=value`;
//      dashes may replace underscores); `--config FILE` loads a file first,
//      wherever it appears, so flags always override the file.
// Unknown keys, malformed values and duplicate keys in one file are errors
// that name the key and (for files) the line; nothing is silently ignored.
// ConfigHelpText() lists every key with its default and a one-line description.
// No exceptions escape; every entry point returns a ConfigStatus.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "nodefl/server/core/log.h"
#include "nodefl/server/core/option_table.h"

namespace nodefl::server {

struct ServerConfig {
  // Network.
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 7443;  // 0 = let the OS pick (tests)

  // TLS material (PEM files). The network layer loads and checks them.
  std::string tls_ca_cert;      // deployment CA that signs device and server certs
  std::string tls_server_cert;  // this server's certificate
  std::string tls_server_key;   // this server's private key
  // Folder holding one certificate per device, named device-<id>.crt; the
  // ids found there are the devices allowed to connect (see device_ids.h).
  std::string credentials_dir;

  // Capacity and timing.
  uint32_t max_devices = 10000;  // devices connected at the same time
  uint32_t idle_timeout_ms = 60000;
  uint32_t heartbeat_interval_ms = 15000;
  uint32_t handshake_timeout_ms = 10000;
  uint32_t hello_timeout_ms = 5000;
  uint32_t max_frame_bytes = 4608;  // largest frame accepted or sent

  // Queues. The per-connection bounds also bound the relay's not-yet-written
  // backlog for an online device; the offline bounds cap everything held
  // (un-acknowledged) for one device; relay_memory_bytes caps all devices.
  uint32_t outbound_queue_messages = 1024;
  uint64_t outbound_queue_bytes = 1u << 20;
  uint32_t offline_queue_messages = 4096;
  uint64_t offline_queue_bytes = 4u << 20;
  uint64_t relay_memory_bytes = 1ull << 30;
  uint32_t relay_backpressure_wait_ms = 5000;
  // Credit (docs/protocol.md): numbered RelaySends the relay has no room for
  // wait on their connection, up to this many bytes each (payload + 64), and
  // the connection goes on reading; they are acknowledged once the relay
  // takes them. A device's send window (its kept-send memory, 24.7 KiB in
  // the emulator) bounds what it has unacknowledged, so a window under this
  // never holds its connection's reader. 0: the reader waits for the relay,
  // as in protocol v1.
  uint32_t relay_parked_bytes = 32768;
  // A PeerKeyRequest naming a device that has not announced its job key
  // (JobKey) yet is answered once it has, or after this long with the
  // certificate alone, which the device cannot key (0: answer at once).
  uint32_t peer_key_wait_ms = 30000;
  // A participant that owes a report for the running round and has been
  // offline this long is unreachable to the job (Job::OnUndeliverable): it
  // misses the round now instead of holding it to its deadline. 0: wait for
  // the deadlines.
  uint32_t offline_grace_ms = 30000;
  // How devices of device-to-device jobs get their peers' certificates and
  // job keys: "request" (PeerKeyRequest, which names each device's
  // neighbours to the server) or "directory" (one public artefact with
  // every participant's, filtered on the device; costs every device the
  // whole directory, about 430 bytes per participant).
  std::string peer_keys = "request";

  // Jobs. The server starts `job` once `job_quorum` devices are online
  // (0: every device with credentials) or `job_wait_ms` after the first
  // device registered (0: wait for the quorum), with the devices online then.
  std::string job = "none";  // none, or a job of server/jobs/job_catalog.h
  uint32_t job_quorum = 0;
  uint32_t job_wait_ms = 0;
  uint32_t job_round_deadline_ms = 300000;  // per round; late devices are recorded
  uint32_t exit_after_jobs = 0;
  // Devices' job uploads (chunked transfers) larger than this are refused.
  uint32_t max_upload_bytes = 8u << 20;
  // Where jobs write their artefacts (tree, codebook, summary); empty: none.
  std::string output_dir;
  // Where the server keeps what must outlive its process (sessions and
  // resume tokens, job records, the restart count: server/store); empty:
  // nothing, and a restarted server knows no device's session.
  std::string data_dir;
  // With a data_dir: the messages the relay holds (queued, not yet
  // acknowledged by their destination) are written to the state file in
  // batches at least this often, at each job round start and at shutdown; a message queued and
  // acknowledged between two writes is never written. A kill loses at most
  // what was accepted in the last interval and not delivered yet.
  uint32_t relay_journal_ms = 100;
  // Threads for heavy job math (dissimilarities, clustering); 0: one per
  // hardware thread.
  uint32_t compute_threads = 0;
  // Every job's own options, one group per algorithm, installed by the job
  // catalog (server/jobs/job_catalog.h: DefaultServerConfigWithJobs()).
  // Their keys parse, print and validate like the server's own.
  OptionGroups job_options;
  // Process.
  uint32_t threads = 0;  // 0 until defaulted: DefaultServerConfig() sets hardware_concurrency
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kLogfmt;
};

// The server's defaults, with `threads` set to
// std::thread::hardware_concurrency() (at least 1), and no job options; the
// server tool starts from jobs::DefaultServerConfigWithJobs(), which adds
// every registered job's.
ServerConfig DefaultServerConfig();

struct ConfigStatus {
  bool ok = true;
  // ApplyFlags saw --help: the caller prints ConfigHelpText() and exits 0.
  bool help_requested = false;
  // When !ok: "<file>:<line>: ..." for files, "--key: ..." for flags,
  // "key: ..." for validation.
  std::string message;

  static ConfigStatus Ok() { return {}; }
  static ConfigStatus Error(std::string text) { return {false, false, std::move(text)}; }
};

// Applies the keys of one file on top of `config`. On error `config` may be
// partially updated; callers discard it.
ConfigStatus LoadConfigFile(const std::filesystem::path& path, ServerConfig& config);
// The same for a file's text already in memory; `name` stands for the file
// in messages ("<name>:<line>: ...").
ConfigStatus LoadConfigText(std::string_view text, std::string_view name, ServerConfig& config);

// Applies `argv[1..argc)` on top of `config`: first every `--config FILE` (in
// order), then every other flag (in order). Positional arguments are errors.
ConfigStatus ApplyFlags(int argc, const char* const* argv, ServerConfig& config);

// Sets one key from its text form, as a file line or flag would.
ConfigStatus SetConfigValue(ServerConfig& config, std::string_view key, std::string_view value);

// Range and consistency checks (ports, bounds > 0, heartbeat shorter than the
// idle timeout, required TLS paths set, ...). The first problem found wins.
ConfigStatus ValidateConfig(const ServerConfig& config);

// Every key of `defaults` (the server's and its job options'), its default
// and a one-line description, for --help. The overload without arguments
// lists the server's own keys.
std::string ConfigHelpText(const ServerConfig& defaults);
std::string ConfigHelpText();

// The effective configuration as `key = value` lines (a valid config file),
// for the start-up log.
std::string FormatConfig(const ServerConfig& config);

}  // namespace nodefl::server
