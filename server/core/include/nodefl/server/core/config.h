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
  // A PeerKeyRequest naming a device that has not announced its job key
  // (JobKey) yet is answered once it has, or after this long with the
  // certificate alone, which the device cannot key (0: answer at once).
  uint32_t peer_key_wait_ms = 30000;
  // How devices of device-to-device jobs get their peers' certificates and
  // job keys: "request" (PeerKeyRequest, which names each device's
  // neighbours to the server) or "directory" (one public artefact with
  // every participant's, filtered on the device; costs every device the
  // whole directory, about 430 bytes per participant).
  std::string peer_keys = "request";

  // Jobs. The server starts `job` once `job_quorum` devices are online
  // (0: every device with credentials) or `job_wait_ms` after the first
  // device registered (0: wait for the quorum), with the devices online then.
  std::string job = "none";  // none | neighbour-echo | fedwalk-hct | fedwalk | fedwalk-histograms | secure-compare
  uint32_t job_quorum = 0;
  uint32_t job_wait_ms = 0;
  uint32_t job_round_deadline_ms = 300000;  // per round; late devices are recorded
  uint32_t exit_after_jobs = 0;
  // neighbour-echo load (benchmarks): sealed messages per directed edge and
  // plaintext bytes per message (56..4064).
  uint32_t job_messages_per_edge = 1;
  uint32_t job_payload_bytes = 56;
  // Devices' job uploads (chunked transfers) larger than this are refused.
  uint32_t max_upload_bytes = 8u << 20;
  // Where jobs write their artefacts (tree, codebook, summary); empty: none.
  std::string output_dir;
  // Threads for heavy job math (dissimilarities, clustering); 0: one per
  // hardware thread.
  uint32_t compute_threads = 0;
  // fedwalk-hct (FedWalk Sec. 4.2; docs/fedwalk.md).
  std::string fedwalk_mode = "strict";   // strict | paper
  uint32_t fedwalk_bins = 0;             // k; 0: floor(ln |V|)
  uint32_t fedwalk_buckets = 16;         // strict mode histogram buckets per bin
  double fedwalk_epsilon_bins = 2.0;     // degree vectors
  double fedwalk_epsilon_upload = 2.0;   // strict mode histograms
  double fedwalk_epsilon_walk = 2.0;     // Eq. 12 codebook
  uint32_t fedwalk_codebook_k = 256;     // most entries kept per codebook row
  std::string fedwalk_linkage = "average";  // average | complete | single
  // Eq. 12 encoder: raw (the paper's score; 2·ε·Δu per draw), scaled (score
  // / 2Δu; ε per draw), auto (scaled in strict mode, raw in paper mode).
  std::string fedwalk_encoder = "auto";
  // Eq. 10's score clipped to [-B, 0] in the codebook (post-processing of
  // the public score table), so the score's sensitivity is B. 0: no clip,
  // the paper's raw score (sensitivity = the run's largest |score|).
  double fedwalk_score_clip = 0;
  // fedwalk (walks, Sec. 4.3; SkipGram, Sec. 4.4). Defaults are the paper's.
  uint32_t fedwalk_walk_length = 40;       // l
  uint32_t fedwalk_walks_per_vertex = 80;  // gamma
  double fedwalk_p = 0.2;                  // 2-hop predictor probability
  uint32_t fedwalk_walks_in_flight = 0;    // 0: 4 per device
  uint32_t fedwalk_walk_timeout_ms = 300000;
  uint32_t fedwalk_dim = 128;
  uint32_t fedwalk_window = 10;
  uint32_t fedwalk_negative = 5;
  uint64_t fedwalk_seed = 0;               // 0: random
  // fedwalk in strict mode: the cluster-histogram job (docs/fedwalk.md,
  // "Strict mode"). Each device's total epsilon over its releases (the
  // guarantee; the walks are post-processing), the partition scheme
  // (random | refined), the clusters of the last release (0: one vertex per
  // cluster, the measured default) and the walk rule (reciprocal | direct).
  // fedwalk_walk_length counts vertices, the start included, for these walks.
  double fedwalk_strict_epsilon = 4.0;
  std::string fedwalk_strict_partition = "random";
  uint32_t fedwalk_strict_clusters = 0;
  std::string fedwalk_strict_walk_rule = "reciprocal";
  // secure-compare (sdk/compare/.../compare_job_format.h): Lumos's greedy
  // initialisation, one secure comparison per edge.
  // Bits per compared value (1..32). 5 holds round(ln d) for any 32-bit
  // degree d (at most 22), the greedy initialisation's value.
  uint32_t compare_width = 5;
  uint32_t compare_digit_bits = 0;              // 0: the plan's default (0..8)
  // base | extension (IKNP without the KOS15 consistency check: secure only
  // against devices that follow the protocol; docs/secure-comparison.md).
  std::string compare_mode = "base";
  std::string compare_value = "log-degree";     // log-degree (round(ln deg)) | degree
  uint32_t compare_max_sessions = 4;            // concurrent sessions per device
  uint32_t compare_session_timeout_ms = 120000;
  std::string compare_results_public = "true";  // true | false: devices report the result bits
  // Process.
  uint32_t threads = 0;  // 0 until defaulted: DefaultServerConfig() sets hardware_concurrency
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kLogfmt;
};

// The defaults, with `threads` set to std::thread::hardware_concurrency()
// (at least 1). Start every configuration from this.
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

// Applies `argv[1..argc)` on top of `config`: first every `--config FILE` (in
// order), then every other flag (in order). Positional arguments are errors.
ConfigStatus ApplyFlags(int argc, const char* const* argv, ServerConfig& config);

// Sets one key from its text form, as a file line or flag would.
ConfigStatus SetConfigValue(ServerConfig& config, std::string_view key, std::string_view value);

// Range and consistency checks (ports, bounds > 0, heartbeat shorter than the
// idle timeout, required TLS paths set, ...). The first problem found wins.
ConfigStatus ValidateConfig(const ServerConfig& config);

// Every key, its default and a one-line description, for --help.
std::string ConfigHelpText();

// The effective configuration as `key = value` lines (a valid config file),
// for the start-up log.
std::string FormatConfig(const ServerConfig& config);

}  // namespace nodefl::server
