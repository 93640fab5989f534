// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SecureAggregateRole: the device side of JOB_KIND_SECURE_AGGREGATE
// (protocol/secagg/job_format.h), and the pattern for embedding an
// AggregationClient in a role:
//   - JobStart round 1: a fresh job key (roles/job_key_announcer.h);
//   - the aggregation's records go to the client; when it knows its peer
//     list, each peer is keyed on demand (roles/peer_key_table.h, cache
//     records: mask peers are not graph neighbours);
//   - the client's peer messages are sealed with that peer's job keys
//     under one device-wide counter and relayed; a peer that cannot be
//     keyed is skipped (it gets no shares, and the client leaves if fewer
//     than the threshold remain);
//   - relayed messages are opened with the sender's job keys (checked
//     against its replay window) and handed to the client; one that comes
//     before the sender is keyed waits in a held slot;
//   - the input comes from an InputFunction (this job: SyntheticInput);
//   - JobStart round 2: report and finish.
//
// Memory, all caller-provided (SecureAggregateMemory): the client's
// (aggregation_client.h), one KeyedPeer per mask peer it may have, and the
// held slots (about 230 bytes each). No heap in this code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/secagg/job_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/peer_key_table.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/seal.h"
#include "nodefl/secagg/aggregation_client.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::secagg {

// A relayed message whose sender is not keyed yet.
struct HeldMessage {
  uint32_t src = 0;
  uint16_t size = 0;
  bool used = false;
  uint8_t sealed[kAggPeerMessageBytes + seal::kSealOverheadBytes] = {};
};

struct SecureAggregateMemory {
  AggregationMemory aggregation;
  Span<roles::KeyedPeer> keys;  // one per mask peer
  Span<HeldMessage> held;
};

// Fills `out` (start.length words) with the device's input codes for the
// aggregation `start` describes.
using InputFunction = Status (*)(void* context, const AggStart& start, Span<uint32_t> out);

class SecureAggregateRole final : public device::Role {
 public:
  struct Stats {
    uint32_t key_failures = 0;
    uint32_t held_dropped = 0;   // relayed messages with no held slot free
    uint32_t rejected = 0;       // relayed messages that did not open, or came for nothing
    uint32_t duplicates = 0;     // relayed messages refused by the replay window
    uint32_t sealed_sent = 0;
    uint32_t opened = 0;
  };

  // `random` draws the job key and everything the client draws.
  SecureAggregateRole(uint32_t own_id, const SecureAggregateMemory& memory, const tls::TlsCredentials& credentials,
                      Drbg& random);

  // The input of each aggregation; without one the role uses the job's
  // SyntheticInput.
  void SetInputFunction(InputFunction fn, void* context) {
    input_ = fn;
    input_context_ = context;
  }
  // See seal/pair_key_source.h (hosts of many emulated devices only).
  void SetPairKeySource(const seal::PairKeySource& source) { keys_.SetPairKeySource(source); }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  const Stats& stats() const { return stats_; }
  const AggregationClient& client() const { return client_; }

 private:
  enum class Phase : uint8_t { kIdle, kRunning, kReporting, kDone };

  Status StartJob(const nodefl_wire_Envelope& message);
  void HandleDelivery(const nodefl_wire_Envelope& message);
  bool OpenAndHand(uint32_t src, ConstByteSpan sealed);
  void RetryHeld();
  void OnClientRecord(uint32_t kind, ConstByteSpan data);
  void WantPeerKeys();
  Status SendKeyRequests(device::DeviceSession& session);
  Status Drain(device::DeviceSession& session);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);

  uint32_t own_id_;
  SecureAggregateMemory memory_;
  Drbg& random_;
  roles::PeerKeyTable keys_;
  AggregationClient client_;
  roles::JobKeyAnnouncer job_key_;
  roles::ReportRepeater report_;
  InputFunction input_ = nullptr;
  void* input_context_ = nullptr;
  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  SecureAggregateParameters params_;
  uint64_t next_counter_ = 1;       // one counter for every seal in the job
  uint32_t keyed_aggregation_ = 0;  // the aggregation whose peers were asked for
  uint32_t input_aggregation_ = 0;  // the aggregation whose input was set
  Stats stats_;
  uint8_t plain_[seal::kMaxSealPlaintextBytes] = {};
};

}  // namespace nodefl::secagg
