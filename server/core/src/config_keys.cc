// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "config_keys.h"

#include <array>

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
    KeySpec{"relay_parked_bytes", &C::relay_parked_bytes,
            "numbered relay sends waiting for queue space held per connection, in bytes, while it goes on "
            "reading (0 = stop reading instead)"},
    KeySpec{"peer_key_wait_ms", &C::peer_key_wait_ms,
            "answer a peer-key request for a device without a job key after this long (0 = at once)"},
    KeySpec{"offline_grace_ms", &C::offline_grace_ms,
            "a participant owing a report and offline this long misses the round at once (0 = wait for the "
            "round's deadline)"},
    KeySpec{"peer_keys", &C::peer_keys,
            "how devices of device-to-device jobs get peer keys: request (names neighbours to the server) or "
            "directory (every participant's keys as one artefact, filtered on the device)"},
    KeySpec{"job", &C::job, "job to run: none, or one of the jobs registered below (each with its own keys)"},
    KeySpec{"job_quorum", &C::job_quorum,
            "devices online before the job starts (0 = every device with credentials)"},
    KeySpec{"job_wait_ms", &C::job_wait_ms,
            "start anyway this long after the first device registered (0 = wait for the quorum)"},
    KeySpec{"job_round_deadline_ms", &C::job_round_deadline_ms,
            "deadline of each job round; devices that miss it are recorded"},
    KeySpec{"exit_after_jobs", &C::exit_after_jobs,
            "exit after this many jobs finished, with status 0 only if all verified (0 = never)"},
    KeySpec{"max_upload_bytes", &C::max_upload_bytes, "largest job upload a device may send"},
    KeySpec{"output_dir", &C::output_dir, "folder for job outputs (tree, codebook, summary); empty = none"},
    KeySpec{"data_dir", &C::data_dir,
            "folder for the state kept across server restarts (sessions, resume tokens, job records, the "
            "relay's held messages; SQLite); empty = none"},
    KeySpec{"relay_journal_ms", &C::relay_journal_ms,
            "with data_dir: write the relay's held messages to the state file at least this often (a kill "
            "loses at most the messages accepted and undelivered in that time)"},
    KeySpec{"compute_threads", &C::compute_threads, "threads for job math (0 = one per hardware thread)"},
    KeySpec{"threads", &C::threads, "I/O threads, by default one per hardware thread"},
    KeySpec{"log_level", &C::log_level, "debug, info, warn or error"},
    KeySpec{"log_format", &C::log_format, "logfmt or json"},
};

}  // namespace

std::span<const KeySpec> Keys() { return kKeys; }

}  // namespace nodefl::server::config_internal
