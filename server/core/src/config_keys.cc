// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "config_keys.h"

#include <array>
#include <charconv>
#include <limits>
#include <type_traits>

namespace nodefl::server::config_internal {
namespace {

using C = ServerConfig;

constexpr std::array kKeys = {
    KeySpec{"listen_address", &C::listen_address, "address to listen on (IPv4 or IPv6 literal)"},
    KeySpec{"listen_port", &C::listen_port, "TCP port to listen on (0 = any free port)"},
    KeySpec{"tls_ca_cert", &C::tls_ca_cert, "PEM file of the deployment CA (required)"},
    KeySpec{"tls_server_cert", &C::tls_server_cert, "PEM file of the server certificate (required)"},
    KeySpec{"tls_server_key", &C::tls_server_key, "PEM file of the server private key (required)"},
    KeySpec{"credentials_dir", &C::credentials_dir,
            "folder of device-<id>.crt peer certificates; their ids may connect (required)"},
    KeySpec{"max_devices", &C::max_devices, "most devices connected at the same time"},
    KeySpec{"idle_timeout_ms", &C::idle_timeout_ms, "close a connection silent for this long"},
    KeySpec{"heartbeat_interval_ms", &C::heartbeat_interval_ms,
            "heartbeat period announced to devices (< idle_timeout_ms)"},
    KeySpec{"handshake_timeout_ms", &C::handshake_timeout_ms, "deadline for the TLS handshake"},
    KeySpec{"hello_timeout_ms", &C::hello_timeout_ms, "deadline for Hello after the handshake"},
    KeySpec{"max_frame_bytes", &C::max_frame_bytes, "largest frame accepted or sent"},
    KeySpec{"outbound_queue_messages", &C::outbound_queue_messages,
            "per-connection outbound queue bound, in messages"},
    KeySpec{"outbound_queue_bytes", &C::outbound_queue_bytes,
            "per-connection outbound queue bound, in bytes"},
    KeySpec{"offline_queue_messages", &C::offline_queue_messages,
            "relay messages held per device until acknowledged (offline queue bound)"},
    KeySpec{"offline_queue_bytes", &C::offline_queue_bytes,
            "relay bytes held per device until acknowledged"},
    KeySpec{"relay_memory_bytes", &C::relay_memory_bytes, "relay bytes held for all devices together"},
    KeySpec{"relay_backpressure_wait_ms", &C::relay_backpressure_wait_ms,
            "a sender waiting for queue space is refused after the destination made no progress this long"},
    KeySpec{"peer_key_wait_ms", &C::peer_key_wait_ms,
            "answer a peer-key request for a device without a job key after this long (0 = at once)"},
    KeySpec{"peer_keys", &C::peer_keys,
            "how devices of device-to-device jobs get peer keys: request (names neighbours to the server) or "
            "directory (every participant's keys as one artefact, filtered on the device)"},
    KeySpec{"job", &C::job,
            "job to run: none, neighbour-echo, fedwalk-hct (tree only), fedwalk (paper mode: tree, walks, "
            "SkipGram; strict mode: cluster histograms, server-side walks, SkipGram), fedwalk-histograms (the "
            "strict job by name) or "
            "secure-compare (Lumos greedy initialisation by secure comparisons)"},
    KeySpec{"job_quorum", &C::job_quorum,
            "devices online before the job starts (0 = every device with credentials)"},
    KeySpec{"job_wait_ms", &C::job_wait_ms,
            "start anyway this long after the first device registered (0 = wait for the quorum)"},
    KeySpec{"job_round_deadline_ms", &C::job_round_deadline_ms,
            "deadline of each job round; devices that miss it are recorded"},
    KeySpec{"exit_after_jobs", &C::exit_after_jobs,
            "exit after this many jobs finished, with status 0 only if all verified (0 = never)"},
    KeySpec{"job_messages_per_edge", &C::job_messages_per_edge,
            "neighbour-echo: sealed messages each device sends to each neighbour"},
    KeySpec{"job_payload_bytes", &C::job_payload_bytes,
            "neighbour-echo: plaintext bytes per message (56..4064)"},
    KeySpec{"max_upload_bytes", &C::max_upload_bytes, "largest job upload a device may send"},
    KeySpec{"output_dir", &C::output_dir, "folder for job outputs (tree, codebook, summary); empty = none"},
    KeySpec{"compute_threads", &C::compute_threads, "threads for job math (0 = one per hardware thread)"},
    KeySpec{"fedwalk_mode", &C::fedwalk_mode,
            "fedwalk-hct privacy mode: strict (edge-DP uploads) or paper (the paper's exact M_v)"},
    KeySpec{"fedwalk_bins", &C::fedwalk_bins, "fedwalk-hct bins k (0 = floor(ln |V|), at most 16)"},
    KeySpec{"fedwalk_buckets", &C::fedwalk_buckets, "fedwalk-hct strict histogram buckets per bin (2..24)"},
    KeySpec{"fedwalk_epsilon_bins", &C::fedwalk_epsilon_bins, "fedwalk-hct epsilon of each degree vector"},
    KeySpec{"fedwalk_epsilon_upload", &C::fedwalk_epsilon_upload,
            "fedwalk-hct epsilon of each strict-mode histogram"},
    KeySpec{"fedwalk_epsilon_walk", &C::fedwalk_epsilon_walk, "fedwalk-hct epsilon of the Eq. 12 codebook"},
    KeySpec{"fedwalk_codebook_k", &C::fedwalk_codebook_k, "fedwalk-hct most codebook entries per vertex (entries below 1e-12 are dropped)"},
    KeySpec{"fedwalk_linkage", &C::fedwalk_linkage, "fedwalk-hct HCT linkage: average, complete or single"},
    KeySpec{"fedwalk_encoder", &C::fedwalk_encoder,
            "Eq. 12 encoder: raw (paper, 2*eps*du per draw), scaled (eps per draw) or auto (by fedwalk_mode)"},
    KeySpec{"fedwalk_score_clip", &C::fedwalk_score_clip,
            "clip Eq. 10's score to [-B, 0] with this B, making the score's sensitivity B (0 = no clip, the "
            "paper's raw score, sensitivity = the run's largest |score|)"},
    KeySpec{"fedwalk_walk_length", &C::fedwalk_walk_length, "fedwalk walk length l (2..1000)"},
    KeySpec{"fedwalk_walks_per_vertex", &C::fedwalk_walks_per_vertex, "fedwalk walks started per vertex (gamma)"},
    KeySpec{"fedwalk_p", &C::fedwalk_p, "fedwalk 2-hop predictor probability p (0..1)"},
    KeySpec{"fedwalk_walks_in_flight", &C::fedwalk_walks_in_flight, "fedwalk walks in flight at once (0 = 4 per device)"},
    KeySpec{"fedwalk_walk_timeout_ms", &C::fedwalk_walk_timeout_ms, "fedwalk: a walk without a result by then is lost"},
    KeySpec{"fedwalk_dim", &C::fedwalk_dim, "fedwalk SkipGram embedding dimension"},
    KeySpec{"fedwalk_window", &C::fedwalk_window, "fedwalk SkipGram window"},
    KeySpec{"fedwalk_negative", &C::fedwalk_negative, "fedwalk SkipGram negative samples"},
    KeySpec{"fedwalk_seed", &C::fedwalk_seed, "fedwalk seed of walk order and training (0 = random)"},
    KeySpec{"fedwalk_strict_epsilon", &C::fedwalk_strict_epsilon,
            "strict fedwalk: total epsilon per device over its histogram releases (0.001..1000)"},
    KeySpec{"fedwalk_strict_partition", &C::fedwalk_strict_partition,
            "strict fedwalk: random (one release) or refined (random release, spectral clusters, second release)"},
    KeySpec{"fedwalk_strict_clusters", &C::fedwalk_strict_clusters,
            "strict fedwalk: clusters of the last release (0 = one vertex per cluster, at most 65535)"},
    KeySpec{"fedwalk_strict_walk_rule", &C::fedwalk_strict_walk_rule,
            "strict fedwalk: walk rule on the histograms, reciprocal (both endpoints) or direct"},
    KeySpec{"compare_width", &C::compare_width, "secure-compare bits per compared value (1..32; default 5 holds round(ln degree))"},
    KeySpec{"compare_digit_bits", &C::compare_digit_bits,
            "secure-compare digit size in bits (0 = whole value up to 8 bits, else 4; at most 8)"},
    KeySpec{"compare_mode", &C::compare_mode,
            "secure-compare oblivious transfers: base or extension (IKNP without the KOS15 check: semi-honest "
            "only, a device that deviates from the protocol can learn its peer's value)"},
    KeySpec{"compare_value", &C::compare_value,
            "secure-compare value: log-degree (round(ln deg), Lumos Eq. 15) or degree"},
    KeySpec{"compare_max_sessions", &C::compare_max_sessions,
            "secure-compare sessions each device runs at once (1..65535)"},
    KeySpec{"compare_session_timeout_ms", &C::compare_session_timeout_ms,
            "secure-compare: a session unsettled this long after its start is aborted"},
    KeySpec{"compare_results_public", &C::compare_results_public,
            "secure-compare: true (devices report result bits; the server writes greedy-init.tsv) or false"},
    KeySpec{"threads", &C::threads, "I/O threads, by default one per hardware thread"},
    KeySpec{"log_level", &C::log_level, "debug, info, warn or error"},
    KeySpec{"log_format", &C::log_format, "logfmt or json"},
};

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
    return "'" + std::string(text) + "' is out of range (0.." +
           std::to_string(std::numeric_limits<T>::max()) + ")";
  }
  *out = static_cast<T>(value);
  return {};
}

std::string ParseDouble(std::string_view text, double* out) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return "'" + std::string(text) + "' is not a number";
  }
  *out = value;
  return {};
}

}  // namespace

std::span<const KeySpec> Keys() { return kKeys; }

const KeySpec* FindKey(std::string_view name) {
  for (const KeySpec& key : kKeys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::string ParseInto(const KeySpec& key, std::string_view text, ServerConfig& config) {
  return std::visit(
      [&](auto member) -> std::string {
        auto& field = config.*member;
        using T = std::remove_reference_t<decltype(field)>;
        if constexpr (std::is_same_v<T, std::string>) {
          field.assign(text);
          return {};
        } else if constexpr (std::is_same_v<T, LogLevel>) {
          if (ParseLogLevel(text, &field)) return {};
          return "'" + std::string(text) + "' is not one of debug, info, warn, error";
        } else if constexpr (std::is_same_v<T, LogFormat>) {
          if (ParseLogFormat(text, &field)) return {};
          return "'" + std::string(text) + "' is not one of logfmt, json";
        } else if constexpr (std::is_same_v<T, double>) {
          return ParseDouble(text, &field);
        } else {
          return ParseUnsigned(text, &field);
        }
      },
      key.field);
}

std::string FormatValue(const KeySpec& key, const ServerConfig& config) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& field = config.*member;
        using T = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return field;
        } else if constexpr (std::is_same_v<T, LogLevel>) {
          return std::string(LogLevelName(field));
        } else if constexpr (std::is_same_v<T, LogFormat>) {
          return std::string(LogFormatName(field));
        } else if constexpr (std::is_same_v<T, double>) {
          char buffer[32];
          const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), field);
          return ec == std::errc() ? std::string(buffer, ptr) : std::string("nan");
        } else {
          return std::to_string(field);
        }
      },
      key.field);
}

}  // namespace nodefl::server::config_internal
