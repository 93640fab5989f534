// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// AggregationClient: a device's side of one secure aggregation at a time
// (the contract: nodefl/protocol/secagg/aggregation_format.h; the server's
// side: server/secagg aggregation_service.h). Sans-IO and independent of
// the job that embeds it: the job hands it the aggregation's JobData
// records and the peer messages it opened, and sends what Peek() returns,
// as JobData to the server or sealed (with its own pair keys for that
// peer) through the relay. So any role can sum a vector through the
// server without the server seeing it: the Lumos training role, a kCAGC
// participant, the benchmark job.
//
//   start      kAggStart + kAggPeers: the peer list (ascending).
//   step 1     a fresh round key pair and self seed; both Shamir-shared
//              t-of-k among the peers (share x = peer id + 1); one peer
//              message each, then kAggKey. A peer the job cannot reach
//              (SkipPeer) gets no shares; fewer than t reached: refuse.
//   step 2     kAggMaskSet: once every peer in it has sent its message and
//              the input is set, mask the input (self mask, one pair mask
//              per mask-set peer) and upload it in kAggMasked runs. The
//              round secret and self seed are wiped once the mask is on.
//   step 3     kAggReveal: the requested shares, checked before any is
//              sent: every named peer must be in the mask set and have
//              sent its shares, and no peer may be asked for the other
//              kind of share than an earlier request asked for (a device
//              reveals at most one of a peer's two secrets, ever, so the
//              server can never remove both masks of one input). A bad
//              request is refused whole (kAggRefuse) and nothing of it is
//              revealed.
//   kAggAbort  wipe and forget.
//
// Refused and counted, never fatal to the device: records for another
// aggregation, out of order, malformed; peer messages that are malformed,
// stale, for another round, from a non-peer, or repeated (replays).
//
// Memory (caller-provided, AggregationMemory): per peer one
// AggregationPeer (about 190 bytes), two Shares and one point; the vector
// (length words). One 4 KiB record buffer inside. No heap in this code
// (MbedTLS allocates inside key generation and ECDH, as everywhere in the
// SDK).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/secagg/masks.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"

namespace nodefl::secagg {

struct AggregationPeer {
  uint32_t id = 0;
  bool reached = false;           // our message went out (SkipPeer: false)
  bool skipped = false;
  bool message_received = false;  // its message (key, and our shares of its secrets) arrived
  bool in_mask_set = false;
  RevealCode revealed = RevealCode::kNothing;  // what we revealed about it (never changes once set)
  RevealCode requested = RevealCode::kNothing; // the pending request
  uint8_t public_key[kAggPublicKeyBytes] = {};
  Share self_seed_share;     // ours of its self seed
  Share round_secret_share;  // ours of its round secret
};

struct AggregationMemory {
  Span<AggregationPeer> peers;  // capacity: most peers an aggregation may give
  Span<Share> shares;           // 2 per peer
  Span<uint64_t> points;        // 1 per peer
  Span<uint32_t> vector;        // capacity: the longest vector
};

class AggregationClient {
 public:
  enum class State : uint8_t {
    kIdle,         // no aggregation
    kPeers,        // started, receiving the peer list
    kSharing,      // step 1: peer messages, then the key
    kAwaitMaskSet,
    kMasking,      // mask set known: waiting for peer messages or the input
    kUploading,
    kAwaitReveal,
    kRevealing,
    kDone,         // our part is over (the server may still abort)
    kRefused,      // we left it (kAggRefuse sent or due)
    kAborted,      // the server aborted it
  };

  struct Stats {
    uint32_t records_refused = 0;    // server records refused (malformed, out of order, another aggregation)
    uint32_t messages_refused = 0;   // peer messages refused (malformed, stale, not a peer, wrong round)
    uint32_t replays = 0;            // a peer's message again
    uint32_t early_dropped = 0;      // peer messages that came before the start and found no room
    uint64_t bytes_to_server = 0;    // record payloads
    uint64_t bytes_to_peers = 0;     // peer message plaintexts
    uint32_t peer_messages = 0;
    uint32_t completed = 0;          // aggregations this device finished its part of
  };

  struct Outgoing {
    bool to_peer = false;  // true: seal `bytes` for `peer` and relay; false: JobData{kind, bytes} to the server
    uint32_t peer = 0;
    uint32_t kind = 0;
    ConstByteSpan bytes;
  };

  // `random` draws the round keys, self seeds and share polynomials (seed
  // it from real entropy).
  AggregationClient(uint32_t own_id, const AggregationMemory& memory, Drbg& random);

  // A JobData record whose kind IsAggregationKind().
  Status OnRecord(uint32_t kind, ConstByteSpan data);
  // An opened peer message (plaintext starting with kAggPeerMessageTag)
  // from `src`, authenticated by the job's seal.
  Status OnPeerMessage(uint32_t src, ConstByteSpan plaintext);
  // The codes (fixed_point.h) to add: exactly `length` words, once per
  // aggregation, any time after the start. kFailedPrecondition otherwise.
  Status SetInput(Span<const uint32_t> codes);

  // The next thing to send, or false when nothing is due now. May do the
  // step's work first (sharing, masking). Stays the same until Advance().
  bool Peek(Outgoing* out);
  // The Outgoing from Peek() was sent.
  void Advance();
  // The job cannot reach the peer of the pending peer message (no keys):
  // it gets no shares; the message is passed over.
  void SkipPeer();

  State state() const { return state_; }
  // Wants the job to key these peers (the peer list is complete).
  bool peers_known() const { return state_ >= State::kSharing && state_ <= State::kDone; }
  Span<const AggregationPeer> peers() const { return Span<const AggregationPeer>(memory_.peers.data(), peer_count_); }
  uint32_t aggregation() const { return start_.aggregation; }
  const AggStart& start() const { return start_; }
  bool input_set() const { return input_set_; }
  // Why we refused, or OK.
  Status refusal() const { return refusal_; }
  const Stats& stats() const { return stats_; }
  // Forgets everything (a new job).
  void Reset();

 private:
  struct Early {
    uint32_t src = 0;
    bool used = false;
    uint8_t bytes[kAggPeerMessageBytes] = {};
  };
  static constexpr size_t kEarly = 4;

  Status OnStart(ConstByteSpan data);
  Status OnPeers(ConstByteSpan data);
  Status OnMaskSet(ConstByteSpan data);
  Status OnReveal(ConstByteSpan data);
  void OnAbort(ConstByteSpan data);
  Status AcceptPeerMessage(uint32_t src, const AggPeerMessage& m);
  void BeginSharing();
  bool MaskIfReady();
  void Refuse(Status why);
  void Wipe();
  AggregationPeer* FindPeer(uint32_t id);
  int32_t IndexOf(uint32_t id) const;
  bool RecordFor(ConstByteSpan data) const;
  bool BuildNext(Outgoing* out);

  uint32_t own_id_;
  AggregationMemory memory_;
  Drbg& random_;
  State state_ = State::kIdle;
  AggStart start_;
  uint32_t last_aggregation_ = 0;
  uint32_t peer_count_ = 0;
  uint32_t peers_received_ = 0;
  bool input_set_ = false;
  RoundKeyPair keys_;
  MaskSeed self_seed_;
  size_t cursor_ = 0;         // peers (sharing, revealing) or words (uploading)
  size_t reveal_end_ = 0;     // where the pending shares record stops
  uint32_t shared_with_ = 0;
  bool key_sent_ = false;
  bool pending_ = false;      // Peek built `out_` and it was not sent yet
  Outgoing out_;
  Status refusal_;
  bool refuse_sent_ = false;
  Early early_[kEarly];
  uint8_t buffer_[kAggRecordBytes] = {};
  Stats stats_;
};

}  // namespace nodefl::secagg
