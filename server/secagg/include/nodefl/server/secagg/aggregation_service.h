// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// AggregationService: the server's side of secure aggregation (the wire
// contract is sdk/protocol/public/nodefl/protocol/secagg/aggregation_format.h;
// docs/secure-aggregation.md). A job embeds it: it adds aggregations
// ("sum these devices' vectors of `length` words"), routes the devices'
// kAgg* records to OnRecord, sends what TakeRecords returns, calls Poll as
// time passes and MarkUnreachable when a device's connection goes, and reads
// the sum from result(). No networking and no clock (callers pass now_us);
// single-threaded.
//
// One aggregation, step by step (each step ends when everyone it waits for
// has answered or dropped, or at its deadline, step_timeout_us after it
// began):
//   start    every device gets kAggStart (its own peer count) and its mask
//            peers (kAggPeers, ascending ids). The mask graph: the full graph
//            (peers = 0), or a random one (Bell et al., CCS'20): each device
//            picks ceil(peers / 2) others at random (a Drbg seeded with
//            graph_seed, stream = round), the relation is made symmetric,
//            and a device left with fewer than `peers` is joined to random
//            others until it has `peers`. So every device has at least
//            `peers` peers (hence at least `threshold` holders for its
//            secrets), and about 2 more on average (13.6 for k = 12 and
//            n = 40, 30.4 for k = 28 and n = 10,000).
//   1 keys   each device sends kAggKey. Those without one at the end are
//            dropped (kAggAbort kExcluded). A device's mask set = its graph
//            peers that sent a key. Robust mode: a device whose mask set is
//            smaller than the threshold could not have its secrets rebuilt;
//            it is excluded (kAggAbort kExcluded) and taken out of the
//            others' mask sets, repeatedly until none is left below. Fewer
//            devices left than min_reporters aborts (kTooFewSurvivors).
//            Paper mode (kCAGC Protocol 4): any missing key aborts.
//            Each remaining device gets kAggMaskSet.
//   2 upload each mask-set device sends its masked vector (kAggMasked runs,
//            each word exactly once). Complete vectors make their senders
//            reporters; the others are dropped (kAggAbort kLate). Fewer
//            reporters than min_reporters aborts (kTooFewSurvivors) before
//            anything is revealed. Paper mode: any missing vector aborts.
//   3 reveal (robust only) each reporter gets kAggReveal: per mask-set peer,
//            its share of the self seed (peer reported) or of the round
//            secret (peer masked and did not report). The shares come back
//            in kAggShares. A reporter that does not answer stays included
//            (its self seed is rebuilt from the others' shares).
//   end      Unmask (unmask.h) gives the reporters' sum; if a secret cannot
//            be rebuilt the aggregation aborts (kUnmaskFailed) and nothing
//            is unmasked.
//
// Records a device sends are checked against its state (OnRecord):
//   - kAccepted: the record moved the aggregation on;
//   - kRejected: a protocol error, counted and otherwise ignored: records
//     that name no aggregation the sender is in, and records that
//     break the contract (wrong step, a second key, a masked run out of
//     range or overlapping words already received, a replayed run, shares
//     the server did not ask that device for, a second share for one peer).
//     A record that does not even decode (wrong size, truncated, an
//     unknown reveal code, a field out of range) from a participant still
//     in the aggregation also drops that device from that point, as if it
//     had gone silent: it gets kAggAbort(kExcluded), its later records are
//     refused and the shares it revealed are not used. A reporter stays a
//     reporter (its vector is complete; the sum includes it).
//   - kLate: a well-formed record from a participant whose step had
//     already closed (for it, or for the whole aggregation). Counted; a
//     late upload gets kAggAbort(kLate) unless the device was told already.
//
// Trust model: semi-honest. The server follows the steps above and may try
// to learn from what it sees; devices follow the contract (a device can
// always shift the sum by lying about its own input). What protects an
// input is on the device: it reveals at most one kind of share per peer,
// ever, so a server that follows the protocol never holds both secrets of
// one device. An actively malicious server could tell different devices
// different stories about who dropped ("v reported" to some of v's peers,
// "v dropped" to others) and collect t shares of each of v's secrets when
// v has at least 2t peers: the default threshold is a strict majority of
// `peers`, but the random graph gives some devices more than `peers`, and an
// explicit threshold may be lower. Bonawitz et al.'s defence against that
// (the consistency-check round: devices sign the reporter list and check
// each other's signatures before revealing) is NOT built, so no claim is
// made against an active server.
//
// Memory per aggregation: the graph (n x peers ids, so the full graph is for
// small fleets: 10,000 devices would hold 10^8 ids), the start records until
// taken, and the uploads. UploadMemory::kKeepVectors keeps every reporter's
// vector until the end (n x length words: 10,000 x 10^4 words = 400 MB);
// UploadMemory::kRunningSum (default) adds a vector into one running sum the
// moment it is complete and frees it, so the uploads cost `length` words plus
// the incomplete uploads in flight (those must be kept apart: a device that
// never completes must stay out of the sum), plus a bit per word received of
// each incomplete upload. Shares: one of 48 bytes per (reporter, mask-set
// peer) pair. All per-step state is freed when the aggregation settles; its
// result and graph stay for the life of the service (late records are still
// attributed to it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/random/drbg.h"

namespace nodefl::server::secagg {

enum class UploadMemory : uint8_t {
  kRunningSum,   // fold each complete vector into one sum (length words)
  kKeepVectors,  // keep every reporter's vector until Unmask (n x length words)
};

struct AggregationRequest {
  std::vector<uint32_t> devices;  // participants, any order; unique, at least 2
  uint32_t length = 0;            // words per vector, 1 .. kMaxAggLength
  nodefl::secagg::AggMode mode = nodefl::secagg::AggMode::kRobust;
  // Mask peers per device: 0 = the full graph (everyone, n - 1 <= kMaxAggPeers);
  // otherwise the random graph above, at least `peers` each (capped at n - 1
  // and kMaxAggPeers; a device ending with more than kMaxAggPeers refuses
  // the request).
  uint32_t peers = 0;
  // Robust mode: shares needed to rebuild a secret, 1 .. the capped `peers`
  // (n - 1 for the full graph); 0 = a strict majority of it, k / 2 + 1.
  // One threshold for the whole aggregation (every device's kAggStart carries
  // it); the graph gives every device at least that many peers. Ignored in
  // paper mode (no shares).
  uint32_t threshold = 0;
  // Robust mode: fewer devices left after step 1, or fewer reporters after
  // step 2, abort before anything is revealed. 0 = max(threshold, 2): a sum
  // of one device would be its input, and fewer reporters than the threshold
  // would leave fewer holders than a secret needs. At most n. Paper mode
  // needs everyone, so it is ignored there.
  uint32_t min_reporters = 0;
  uint64_t step_timeout_us = 30'000'000;  // the deadline of each step, from its start
  uint64_t graph_seed = 1;                // the random graph's seed (public)
  UploadMemory memory = UploadMemory::kRunningSum;
};

enum class AggregationState : uint8_t { kRunning, kDone, kAborted };
enum class AggregationStep : uint8_t { kKeys, kUploads, kReveals, kSettled };

// Names for logs and progress lines: "keys", "uploads", "reveals",
// "settled"; "excluded", "too-few-survivors", "late", "unmask-failed",
// "cancelled".
const char* StepName(AggregationStep step);
const char* AbortReasonName(nodefl::secagg::AbortReason reason);

// Record payload bytes (JobData.data) to and from one device.
struct DeviceTraffic {
  uint64_t bytes_received = 0;  // from the device, every record it sent for the aggregation
  uint64_t bytes_sent = 0;      // to the device
  uint32_t records_received = 0;
  uint32_t records_sent = 0;
};

struct AggregationResult {
  uint32_t id = 0;
  uint64_t round = 0;
  nodefl::secagg::AggMode mode = nodefl::secagg::AggMode::kRobust;
  uint32_t length = 0;
  uint32_t threshold = 0;      // as sent in kAggStart (0 in paper mode)
  uint32_t min_reporters = 0;  // effective
  AggregationState state = AggregationState::kRunning;
  AggregationStep step = AggregationStep::kKeys;
  std::vector<uint32_t> sum;       // mod 2^32, set when done (decode with DecodeFixedPointSum)
  std::vector<uint32_t> included;  // the reporters, ascending (set when done)
  // Who dropped where, ascending (complete once settled).
  std::vector<uint32_t> dropped_at_keys;       // no key by the end of step 1 (or gone during it)
  std::vector<uint32_t> excluded;              // robust: mask set below the threshold
  std::vector<uint32_t> dropped_at_uploads;    // in a mask set, no complete vector
  std::vector<uint32_t> dropped_at_reveals;    // reporters that did not answer their reveal (still included)
  nodefl::secagg::AbortReason abort_reason{};  // valid when aborted
  std::string message;                         // why it aborted (Unmask's error for kUnmaskFailed)
  std::map<uint32_t, DeviceTraffic> traffic;   // per participant
  uint64_t rejected_records = 0;               // protocol errors from participants
  uint64_t late_records = 0;
  // The server's unmasking: P-256 scalar multiplications (one per dropped
  // secret rebuilt, one per pair seed recomputed) and the time Unmask took
  // (steady_clock; a figure, not a dependency).
  uint64_t scalar_multiplications = 0;
  uint64_t unmask_us = 0;
  uint64_t added_us = 0;
  uint64_t wall_us = 0;  // from Add to settling, from the now_us values given

  bool settled() const { return state != AggregationState::kRunning; }
};

// A record for the job to send: JobData {kind, bytes} to `device`.
struct AggRecord {
  uint32_t device = 0;
  uint32_t kind = 0;  // nodefl::secagg::AggDataKind
  std::vector<uint8_t> bytes;
};

struct AggregationTotals {
  uint32_t aggregations = 0;
  uint32_t running = 0;
  uint32_t done = 0;
  uint32_t aborted = 0;
  uint32_t refused_requests = 0;  // Adds that returned 0
  uint64_t records_accepted = 0;
  uint64_t records_rejected = 0;  // including records no aggregation could claim
  uint64_t records_late = 0;
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
};

class AggregationService {
 public:
  // round = (round_salt << 32) | aggregation id: give each job (or each run
  // of the server) its own salt so that rounds never repeat. `blinding`
  // (optional, must outlive the service) blinds Unmask's scalar
  // multiplications; without it the service seeds its own from round_salt
  // (blinding is a side-channel measure: it needs no secrecy to be correct).
  explicit AggregationService(uint64_t round_salt, Drbg* blinding = nullptr);
  ~AggregationService();
  AggregationService(const AggregationService&) = delete;
  AggregationService& operator=(const AggregationService&) = delete;

  // A new aggregation (ids from 1, dense) with its start records queued.
  // Returns 0 and queues nothing for a request it refuses (why: last_refusal()).
  uint32_t Add(const AggregationRequest& request, uint64_t now_us);
  const std::string& last_refusal() const { return last_refusal_; }

  // The records queued since the last call, in the order they were made.
  std::vector<AggRecord> TakeRecords();

  enum class Outcome : uint8_t { kAccepted, kRejected, kLate };
  // A device -> server record (kAggKey, kAggMasked, kAggShares, kAggRefuse;
  // any other kind is rejected). Deadlines that passed by now_us close
  // their steps first.
  Outcome OnRecord(uint32_t device, uint32_t kind, std::span<const uint8_t> bytes, uint64_t now_us);

  // Closes the steps whose deadline passed.
  void Poll(uint64_t now_us);
  // The device is gone: dropped now from every running aggregation it is
  // in, in whatever step (which may then end early). Nothing more is sent
  // to it. Not remembered for later Adds (it may come back).
  void MarkUnreachable(uint32_t device, uint64_t now_us);
  // Aborts a running aggregation (kCancelled; every device still in it is told).
  void Cancel(uint32_t id, uint64_t now_us);

  // id from Add (>= 1).
  const AggregationResult& result(uint32_t id) const;
  // How many devices the aggregation's current step still waits for (0 once
  // settled): progress for a step that takes minutes.
  uint32_t awaited(uint32_t id) const;
  // A device's mask peers (ascending ids) in a running or settled aggregation;
  // empty for a non-participant.
  std::vector<uint32_t> PeersOf(uint32_t id, uint32_t device) const;
  uint32_t count() const { return static_cast<uint32_t>(aggregations_.size()); }
  const AggregationTotals& totals() const { return totals_; }

 private:
  struct Aggregation;
  struct Participant;

  Outcome OnKey(Aggregation& a, Participant& p, std::span<const uint8_t> bytes);
  Outcome OnMasked(Aggregation& a, Participant& p, std::span<const uint8_t> bytes);
  Outcome OnShares(Aggregation& a, Participant& p, std::span<const uint8_t> bytes);
  Outcome OnRefuse(Aggregation& a, Participant& p, std::span<const uint8_t> bytes);
  Outcome Malformed(Aggregation& a, Participant& p);
  Outcome Late(Aggregation& a, Participant& p, bool upload);
  Outcome Count(Aggregation& a, Outcome outcome);

  void Advance(Aggregation& a, uint64_t now_us);
  void CloseKeys(Aggregation& a, uint64_t now_us);
  void CloseUploads(Aggregation& a, uint64_t now_us);
  void Finish(Aggregation& a, uint64_t now_us);
  void Drop(Aggregation& a, Participant& p);
  void Abort(Aggregation& a, nodefl::secagg::AbortReason reason, std::string message, uint64_t now_us);
  void Settle(Aggregation& a, uint64_t now_us);
  void Send(Aggregation& a, Participant& p, uint32_t kind, std::vector<uint8_t> bytes);
  void Tell(Aggregation& a, Participant& p, nodefl::secagg::AbortReason reason);
  void ExpectFrom(Aggregation& a, Participant& p);
  void Answered(Aggregation& a, Participant& p);

  uint64_t round_salt_;
  std::unique_ptr<Drbg> own_blinding_;
  Drbg* blinding_;
  std::vector<std::unique_ptr<Aggregation>> aggregations_;  // index = id - 1
  std::vector<AggRecord> outbox_;
  std::string last_refusal_;
  AggregationTotals totals_;
};

}  // namespace nodefl::server::secagg
