// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What every connection of the server shares: configuration, logs, the TLS
// configuration, the registry, the relay, the peer-certificate store and the
// job runner. Owned by Server; connections hold a reference.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/job_keys.h"
#include "nodefl/server/core/log.h"
#include "nodefl/server/net/peer_certificates.h"
#include "nodefl/server/net/relay_room.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay.h"
#include "nodefl/server/store/relay_journal_store.h"
#include "nodefl/server/store/state_store.h"
#include "nodefl/tls/config.h"
#include "nodefl/protocol/envelope.pb.h"

namespace nodefl::server::net {

// Receives job reports and uploads from connections (any thread). A
// connection delivers them in the order the device sent them.
class JobSink {
 public:
  virtual ~JobSink() = default;
  virtual void OnJobReport(uint32_t device, uint64_t job_id, uint32_t round,
                           const nodefl_wire_JobReport& report) = 0;
  // A complete upload whose digest matched.
  virtual void OnJobUpload(uint32_t device, uint64_t job_id, uint32_t round, uint32_t artefact,
                           std::vector<uint8_t> bytes) = 0;
};

// A public artefact to stream to devices, with its digest computed once.
struct StreamedArtefact {
  uint32_t kind = 0;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  std::array<uint8_t, 32> sha256{};
};

struct ServerCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> handshakes_ok{0};
  std::atomic<uint64_t> handshakes_failed{0};
  std::atomic<uint64_t> registered{0};
  std::atomic<uint64_t> refused{0};           // Hello refused (identity, token, capacity)
  std::atomic<uint64_t> protocol_errors{0};   // connections closed for a protocol violation
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> relay_sent{0};        // RelaySend accepted
  std::atomic<uint64_t> relay_delivered{0};   // RelayDeliver written
  std::atomic<uint64_t> relay_bytes{0};       // sealed payload bytes accepted
  std::atomic<uint64_t> relay_parked{0};      // RelaySends that waited on their connection for room
  std::atomic<uint64_t> open_connections{0};
  std::atomic<uint64_t> artefact_bytes{0};    // public artefact bytes streamed to devices
  std::atomic<uint64_t> upload_bytes{0};      // job upload bytes received from devices
  std::atomic<uint64_t> job_keys_announced{0};
  std::atomic<uint64_t> peer_key_requests{0};     // PeerKeyRequest messages received
  std::atomic<uint64_t> peer_keys_unanswered{0};  // answered found = false after peer_key_wait_ms
};

struct ServerContext {
  ServerConfig config;
  Logger* log = nullptr;
  const tls::TlsConfig* tls = nullptr;
  DeviceRegistry* registry = nullptr;
  Relay* relay = nullptr;
  const PeerCertificateStore* certificates = nullptr;
  // Devices' announced job keys (may be null: answers carry none).
  JobKeyTable* job_keys = nullptr;
  JobSink* jobs = nullptr;
  // The state kept across restarts (ServerConfig::data_dir); null without
  // one.
  store::ServerStateStore* state = nullptr;
  // The relay's journal in it (null without one): written at each round
  // start as well as at its interval.
  store::StoredRelayJournal* relay_journal = nullptr;
  // Wakes senders held back by a full relay queue when room appears.
  RelayRoom relay_room;
  ServerCounters counters;
};

}  // namespace nodefl::server::net
