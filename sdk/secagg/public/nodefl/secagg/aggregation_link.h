// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// AggregationLink: what a role needs to sum a vector through the server's
// AggregationService, in one object: the AggregationClient
// (aggregation_client.h) plus everything around it that touches the
// session and the keys.
//   - the aggregation's JobData records (aggregation_format.h) go to the
//     client;
//   - once the client knows its mask peers, each is keyed on demand
//     (roles/peer_key_table.h cache records: mask peers are not graph
//     neighbours);
//   - the client's peer messages are sealed with that peer's job keys and
//     relayed; a peer that cannot be keyed is skipped (the client leaves
//     if fewer than its threshold remain);
//   - relayed messages are opened with the sender's job keys, checked
//     against its replay window and handed to the client; one that
//     overtakes its sender's key waits in a held slot. Give one held slot
//     per mask peer: a message dropped for want of a slot is lost, and
//     this device then waits for it until the step's deadline;
//   - the input comes from an InputFunction when an aggregation wants it.
//
// Keys the role holds itself. A role that keys some peers for its own
// messages (its graph neighbours) lends that table (SetKnownKeys): a mask
// peer found there is sealed to with those keys and never asked for again.
// That peer's relayed messages reach the role, which opens them (one replay
// window per key) and hands an aggregation message's plaintext to
// OnPeerPlaintext.
//
// Counters. Seal() needs a counter that never repeats under one pair's job
// keys. A role that also seals its own messages to the same peers (a tree
// neighbour can be a mask peer) must give the link its own device-wide
// counter (set_counter), so both draw from one sequence; otherwise the
// link keeps its own.
//
// Used by SecureAggregateRole (aggregate_role.h) and by any role that sums
// through the service. Memory, all caller-provided (AggregationLinkMemory):
// the client's, one KeyedPeer per mask peer and the held slots (about 230
// bytes each). No heap in this code (MbedTLS allocates inside certificate
// checks and ECDH).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/config.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/peer_key_table.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/seal/seal.h"
#include "nodefl/secagg/aggregation_client.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::secagg {

// A relayed message whose sender is not keyed yet.
struct HeldMessage {
  uint32_t src = 0;
  // The link's aggregation count when it came. A message may come one
  // aggregation ahead of its receiver (a faster peer); one whose sender is
  // still nobody to the link an aggregation later is dropped.
  uint32_t generation = 0;
  uint16_t size = 0;
  bool used = false;
  uint8_t sealed[kAggPeerMessageBytes + seal::kSealOverheadBytes] = {};
};

struct AggregationLinkMemory {
  AggregationMemory aggregation;
  Span<roles::KeyedPeer> keys;  // one per mask peer
  Span<HeldMessage> held;
};

// Fills `out` (start.length words) with the role's input codes for the
// aggregation `start` describes. kUnavailable: not ready yet, ask again at
// the next Pump. Any other error leaves the client without input: the
// server drops the device from that aggregation at its deadline.
using InputFunction = Status (*)(void* context, const AggStart& start, Span<uint32_t> out);

class AggregationLink {
 public:
  struct Stats {
    uint32_t key_failures = 0;
    uint32_t held_dropped = 0;  // relayed messages with no held slot free
    uint32_t rejected = 0;      // relayed messages that did not open, or came for nothing
    uint32_t duplicates = 0;    // relayed messages refused by the replay window
    uint32_t sealed_sent = 0;
    uint32_t opened = 0;
    uint64_t bytes_up = 0;  // record bytes sent to the server
  };

  AggregationLink(uint32_t own_id, const AggregationLinkMemory& memory, const tls::TlsCredentials& credentials,
                  Drbg& random);

  // See seal/pair_key_source.h (hosts of many emulated devices only).
  void SetPairKeySource(const seal::PairKeySource& source) { keys_.SetPairKeySource(source); }
  // The role's device-wide seal counter (see above); nullptr: the link's own.
  void set_counter(uint64_t* counter) { counter_ = counter != nullptr ? counter : &own_counter_; }
  // The role's own key table (see above); nullptr: none.
  void SetKnownKeys(roles::PeerKeyTable* known) { known_ = known; }
  void SetInputFunction(InputFunction fn, void* context) {
    input_ = fn;
    input_context_ = context;
  }

  // A new job whose ephemeral key is `own_key` (kept by the caller for the
  // whole job): keys, held messages, client and counters start afresh.
  void StartJob(uint64_t job_id, const seal::JobKeyPair& own_key);
  // The job is over: every job key wiped, the client forgotten.
  void EndJob();

  // A PeerCertificate answering one of the link's requests; false if it
  // was not the link's (the role may have asked for it).
  bool OnCertificate(const nodefl_wire_PeerCertificate& certificate);
  // A relayed message from a peer the link keys (or may key soon); the
  // role passes deliveries it does not take itself.
  void OnDelivery(const nodefl_wire_RelayDeliver& delivery);
  // An aggregation message the role opened with its own keys (see above).
  void OnPeerPlaintext(uint32_t src, ConstByteSpan plaintext);
  // A JobData record with IsAggregationKind(kind).
  void OnRecord(uint32_t kind, ConstByteSpan data);
  // The connection broke: key requests in flight are asked again.
  void OnRestart() { keys_.OnRestart(); }

  // Key requests (at most `max_outstanding` in flight: a role that asks
  // for keys itself gives the link what its own requests leave), the input
  // when due, the client's records and sealed messages, while the session
  // has room. `round` goes into envelopes.
  [[nodiscard]] Status Pump(device::DeviceSession& session, uint32_t round,
                            uint32_t max_outstanding = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS);

  const AggregationClient& client() const { return client_; }
  AggregationClient& client() { return client_; }
  const Stats& stats() const { return stats_; }

 private:
  bool OpenAndHand(uint32_t src, ConstByteSpan sealed);
  // The keys to seal to `id` with: the role's, else the link's; nullptr if neither has a record.
  roles::KeyedPeer* SendKeysOf(uint32_t id);
  void RetryHeld();
  void WantPeerKeys();
  void SetInputIfDue();

  uint32_t own_id_;
  AggregationLinkMemory memory_;
  roles::PeerKeyTable keys_;
  AggregationClient client_;
  InputFunction input_ = nullptr;
  void* input_context_ = nullptr;
  uint64_t job_id_ = 0;
  uint64_t own_counter_ = 1;
  uint64_t* counter_ = &own_counter_;
  roles::PeerKeyTable* known_ = nullptr;
  uint32_t generation_ = 0;         // aggregations whose peers were asked for, this job
  uint32_t keyed_aggregation_ = 0;  // the aggregation whose peers were asked for
  uint32_t input_aggregation_ = 0;  // the aggregation whose input was set
  Stats stats_;
  uint8_t plain_[seal::kMaxSealPlaintextBytes] = {};
};

}  // namespace nodefl::secagg
