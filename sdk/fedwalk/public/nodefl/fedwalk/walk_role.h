// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkWalkRole: the device side of JOB_KIND_FEDWALK_WALKS, FedWalk's
// random walk generator (FedWalk Sec. 4.3, Alg. 1;
// contract and walk semantics in walk_format.h). It runs on what the HCT
// job left on the device (WalkInputsFrom: neighbour records, codebook rows
// including the device's own, the tree and the bin plan).
//
//   round 1 (kWalkRoundKeys): JobStart carries the WalkParameters. The
//     device draws this job's ephemeral key and announces it (JobKey,
//     roles/job_key_announcer.h), fetches the certificates and job keys of
//     its walk neighbours (those with a codebook row; from the peer
//     directory when JobStart says so, wire/peer_directory.h) and derives
//     pair and job keys (roles/peer_key_table.h), then
//     reports: OK, kUnauthenticated if a key failed, kDeadlineExceeded if
//     the deadline passed first, kResourceExhausted if the device's memory
//     cannot hold walks of length l (it then takes part in nothing: every
//     walk that reaches it is dropped).
//   round 2 (kWalkRoundWalks): walks start (JobData kStartWalks) and travel
//     (RelayDeliver: sealed walk messages). Each walk gets one step
//     (walk_step.h) as soon as it is readable; it then waits in the queue
//     (walk_queue.h) until it can be sent on: sealed to the next device
//     (RelaySend) or, finished, to the server (JobData kWalkResult).
//   round 3 (kWalkRoundReport): walks still held end as kDropped and go to
//     the server; then the report (below). Walks arriving from now on end
//     as kDropped without a step.
// Walk records and deliveries are accepted from round 1 on: a walk that
// arrives before a key it needs is there simply waits for it. Walk traffic
// (RelaySend, kWalkResult, kDroppedStarts) always carries Envelope.round =
// kWalkRoundWalks, whatever round the device is in.
//
// Keys on demand. A 2-hop jump joins devices that are not neighbours: the
// device sending to a predicted u', and u' receiving from it, each request
// the other's certificate when first needed (PeerKeyRequest), holding the
// walk meanwhile (a sealed one as received, opened in arrival order once
// the key is there). Non-neighbour keys live in a bounded LRU cache
// (roles/peer_key_table.h).
//
// No walk is lost silently. The queue holds min(max_pending_walks, the
// slots the storage gives) walks. When it is full,
//   * a kStartWalks record's walks that do not fit (or are longer than
//     the job's l) are answered at once by one kDroppedStarts record
//     (walk_format.h);
//   * an arriving walk whose sender's key is ready is opened into scratch
//     memory and sent to the server at once as kDropped, as it is;
//   * an arriving walk that could not be opened (its sender's key is not
//     there, no cache record is free, the key failed) cannot be read at
//     all: it is counted (stats().lost) and reported as rejected; the
//     server, which knows every walk id it started, sees it missing.
// A walk whose next device has no key (certificate not found, failed
// verification, no cache record, round 2's deadline passed while waiting)
// also ends as kDropped at the server, with its entries so far.
// Messages a broken connection swallowed (sent but not flushed) are gone:
// the session has no acknowledgement for device-to-server traffic.
//
// Sealing. Every walk message is sealed (seal.h) with the job keys of the
// pair, under one device-wide counter per job, so counters never repeat
// under any key (see roles/peer_key_table.h on evicted cache records). The counter
// and the ephemeral key start together (a new job id in round 1's
// JobStart) and end together (the role's report of round 3 wipes the job's
// keys); a JobStart repeating the running job changes neither. The
// receiver opens a message with the sender's job keys and checks the
// counter against that sender's replay window.
//
// Privacy accounting. Every Enc() (a draw from a codebook row, Eq. 12) is
// one release, recorded in the PrivacyLedger (phase kPhaseWalks,
// Mechanism::kExponential, the parameters' mode) before the walk leaves the
// device; a walk whose encodings the ledger cannot record (full, or past the
// device's budget) leaves without them, kDropped. The cost is the device's
// own figure (encoder_cost.h): per encoding ε = the larger of what it
// measures over the rows it holds and the server's epsilon_per_encoding,
// δ = the rows' support difference plus their largest truncated mass,
// unbounded when its rows share no output. Per edge, a step costs its own
// encodings plus every encoding the walk makes after it (changing one of
// this device's edges changes the walk's every later hop), so each step
// records edge ε = (encodings + remaining) x ε; per-device sums of
// encodings would understate that. Every walk encoding is marked
// unbounded against the server: the relay's metadata shows the walk's
// path, whatever the encodings hide (docs/privacy.md).
//
// Report (round 3; repeated after a reconnect): JobReport
//   expected   walks started here (kStartWalks entries, dropped ones too)
//   sent       walk messages sent on to other devices
//   received   walks that ended here and went to the server as kComplete
//              or kDeadEnd
//   rejected   walks dropped here (every kDropped result, dropped start and
//              lost walk) plus messages refused (failed authentication,
//              malformed, unknown record kinds, another job)
//   duplicates replayed walk messages refused
//   releases, epsilon: the encodings made in this job and their ε.
// Round 1's report carries the code and, as rejected, the key failures.
//
// Rules of the conversation, as in the other roles: JobStart.deadline_ms
// starts the round's deadline at the next OnPoll; a repeated JobStart of
// the current round (after a reconnect) repeats its report if it went out;
// OnSessionRestart re-requests certificates that were in flight and
// repeats the last report. Malformed JobStart parameters return an error
// from OnMessage (the session closes); malformed walk traffic is counted,
// never fatal.
//
// Memory (WalkStorage, all caller-provided; no heap in this code, see
// roles/peer_key_table.h for MbedTLS): per neighbour one roles::KeyedPeer (~200 bytes); per
// cache record one roles::KeyedPeer; per queue slot 24 + WalkSlotBytes(l) bytes
// (204 bytes per slot at l = 40); scratch WalkSlotBytes(l); the tree index
// (TreeIndex: about 12 bytes per vertex); the predictor pool (4 bytes per
// entry). The object itself is about 2.5 KiB on 64-bit hosts, half of it
// the peer directory's entry buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/fedwalk/encoder_cost.h"
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/roles/peer_key_table.h"
#include "nodefl/fedwalk/walk_queue.h"
#include "nodefl/fedwalk/walk_step.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/protocol/peer_directory.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::fedwalk {

// What the HCT job left on the device.
struct WalkInputs {
  Span<const HctNeighbour> neighbours;       // sorted by id
  Span<const CodebookEntry> codebook_pool;   // their rows (HctNeighbour::codebook_offset)
  Span<const CodebookEntry> own_row;         // the device's own codebook row
  float own_truncated_mass = 0.0f;           // what that row leaves out of Eq. 12
  ConstByteSpan tree;                        // kTree bytes (empty: no predictor)
  ConstByteSpan bin_plan;                    // vertex_count bytes (empty: no predictor)
  uint8_t bins = 0;
  uint32_t vertex_count = 0;
  // The HCT role whose storage the spans above point into, and the job
  // that filled it (WalkInputsFrom sets both; nullptr: inputs the caller
  // owns). That role running another job rewrites the storage under the
  // spans: a walk job then refuses to start (kFailedPrecondition) until
  // the new results are bound (Init).
  const FedWalkHctRole* hct = nullptr;
  uint64_t hct_job_id = 0;
};
// The inputs of a finished HCT role (its storage must outlive the walk job).
WalkInputs WalkInputsFrom(const FedWalkHctRole& hct);

struct WalkStorage {
  Span<roles::KeyedPeer> neighbour_peers;  // >= the neighbours' count
  Span<roles::KeyedPeer> peer_cache;       // non-neighbours (may be empty: no 2-hop jumps to or from strangers)
  Span<WalkSlot> slots;            // the queue's slots
  Span<uint8_t> slot_memory;       // slots.size() x WalkSlotBytes(l)
  Span<uint8_t> scratch;           // WalkSlotBytes(l)
  Span<uint32_t> tree_parent;      // TreeIndex::NodeCount(leaves)
  Span<uint32_t> tree_leaf_of_vertex;  // vertex_count
  Span<uint32_t> pool;             // the predictor's pool; the largest degree estimate suffices
};

class FedWalkWalkRole final : public device::Role {
 public:
  // Local figures of the current job, for the app (the report carries a
  // summary, see above).
  struct Stats {
    uint32_t started = 0;          // kStartWalks entries taken (not dropped)
    uint32_t dropped_starts = 0;   // kStartWalks entries answered by kDroppedStarts
    uint32_t received = 0;         // walk messages opened and accepted
    uint32_t forwarded = 0;        // walk messages sent on
    uint32_t predicted = 0;        // of which 2-hop jumps
    uint32_t finished = 0;         // results sent: kComplete or kDeadEnd
    uint32_t dropped = 0;          // results sent: kDropped
    uint32_t lost = 0;             // walks that could not be read nor held
    uint32_t rejected = 0;         // messages refused (authentication, format, job)
    uint32_t duplicates = 0;       // replays refused
    uint32_t encodings = 0;        // Enc() draws recorded in the ledger
    uint32_t key_requests = 0;     // PeerKeyRequest messages sent
  };

  // `rng` draws every walk decision and encoding; `random` feeds ECDH
  // blinding (give it a different DRBG, see crypto/rng.h). `ledger` records
  // every encoding. All must outlive the role, as must `storage`.
  FedWalkWalkRole(uint32_t own_id, const WalkStorage& storage, const tls::TlsCredentials& credentials,
                  crypto::RandomFunction random, void* random_context, Drbg& rng, PrivacyLedger& ledger);

  // Binds the HCT job's results (again before each walk job if they
  // changed; not during a job). kInvalidArgument for neighbours not sorted
  // or including the device, more neighbours than storage.neighbour_peers,
  // a bin plan of the wrong size; kFailedPrecondition for credentials
  // without the device's identity or a CA. A tree that fails TreeIndex's
  // checks, or storage too small for its index, leaves the predictor off
  // (tree_indexed() is false) rather than failing.
  Status Init(const WalkInputs& inputs);
  // Drops the job in progress, if any, and returns to idle: its held walks
  // are gone (the server counts them lost), its later messages are
  // refused. For a device whose server started the FedWalk plan over (an
  // HCT job ran again, e.g. after a server restart): Abandon, then Init
  // with the new results, before the new walk job starts.
  void Abandon();

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  // Round 3 reported.
  bool finished() const { return phase_ == Phase::kDone; }
  uint32_t round() const;
  bool refused() const { return refused_; }
  bool tree_indexed() const { return !tree_index_.empty(); }
  const Stats& stats() const { return stats_; }
  const WalkParameters& parameters() const { return params_; }
  // The encoder's cost as this device measured it over its rows (Init).
  const EncoderCost& measured_encoder_cost() const { return encoder_cost_; }
  // What one encoding costs in this job (measured and claimed, the larger).
  const ReleaseCost& encoding_cost() const { return encoding_cost_; }
  size_t held_walks() const { return queue_.in_use(); }
  size_t queue_capacity() const { return queue_.capacity(); }
  const roles::PeerKeyTable& peers() const { return peers_; }
  // See roles::PeerKeyTable::SetPairKeySource.
  void SetPairKeySource(const seal::PairKeySource& source) { peers_.SetPairKeySource(source); }

 private:
  enum class Phase : uint8_t { kIdle, kKeys, kKeysReported, kWalks, kReport, kDone };

  Status OnJobStart(const nodefl_wire_Envelope& message);
  Status StartJob(uint64_t job_id, const WalkParameters& params, bool directory);
  Status HandleDirectoryChunk(const nodefl_wire_Envelope& message);
  static void OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry);
  void EnterRound(uint32_t round, uint32_t deadline_ms);
  void HandleStartWalks(const nodefl_wire_Envelope& message, device::DeviceSession& session);
  void HandleDelivery(const nodefl_wire_Envelope& message, device::DeviceSession& session);
  void HandleCertificate(const nodefl_wire_PeerCertificate& certificate);

  // Opens `sealed` from `peer` into `out`; checks the walk. The walk's
  // header on success; counts refusals.
  bool OpenWalk(roles::KeyedPeer* peer, ConstByteSpan sealed, ByteSpan out, WalkHeader* header);
  void OpenHeldFrom(roles::KeyedPeer* peer);
  // Runs the step on a walk held in `slot` and decides where it goes.
  void Step(WalkSlot* slot);
  void Route(WalkSlot* slot, uint32_t destination);
  void EndHere(WalkSlot* slot, WalkOutcome outcome);
  void Abandon(WalkSlot* slot);
  void AttachPeer(WalkSlot* slot, uint32_t peer);
  void DetachPeer(WalkSlot* slot);
  void EndWaitingWalks(bool only_for_keys);
  Status SendDroppedNow(device::DeviceSession& session, const WalkHeader& header, ConstByteSpan ids);

  Status SendKeyRequests(device::DeviceSession& session);
  // Sends held walks that can go (round robin) while the session can send.
  Status SendHeldWalks(device::DeviceSession& session);
  // Whether `slot` can go now: a result, or a forward whose peer's key is
  // there (`*peer`, else nullptr).
  bool CanLeave(const WalkSlot& slot, roles::KeyedPeer** peer);
  // Sends a slot CanLeave() allowed: its result, or the walk to `peer`.
  Status SendHeld(device::DeviceSession& session, WalkSlot* slot, roles::KeyedPeer* peer);
  // Sends the next held walk that can go, if any (the caller checked that
  // the session can send). `*sent`: whether a slot was freed.
  Status SendOneHeldWalk(device::DeviceSession& session, bool* sent);
  // A free slot in `state`; when none is free, one held walk goes out
  // first (OnMessage's one message) if the session can send in order.
  WalkSlot* AcquireMakingRoom(SlotState state, device::DeviceSession& session);
  Status SendResult(device::DeviceSession& session, WalkSlot* slot);
  Status SendForward(device::DeviceSession& session, WalkSlot* slot, roles::KeyedPeer* peer);
  Status SendReport(device::DeviceSession& session, uint32_t round);
  bool NeighbourKeysSettled() const;

  const uint32_t own_id_;
  const WalkStorage storage_;
  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;
  Drbg& rng_;
  PrivacyLedger& ledger_;
  roles::PeerKeyTable peers_;
  WalkQueue queue_;
  TreeIndex tree_index_;
  WalkInputs inputs_;
  WalkStepContext context_;
  uint32_t bin_sizes_[kMaxBins] = {};
  bool initialised_ = false;

  // The job.
  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  roles::JobKeyAnnouncer job_key_;
  bool directory_ = false;  // neighbours' keys come from the peer directory
  protocol::PeerDirectoryReceiver directory_rx_{&OnDirectoryEntry, this};
  WalkParameters params_;
  bool refused_ = false;
  uint64_t next_counter_ = 1;  // device-wide seal counter of this job
  EncoderCost encoder_cost_;    // measured over the rows in Init
  ReleaseCost encoding_cost_;   // per encoding in this job
  double edge_epsilon_ = 0.0;   // this job's per-edge total (reported)
  size_t send_cursor_ = 0;
  Stats stats_;

  // The current round.
  uint32_t round_ = 0;
  bool deadline_pending_ = false;
  uint32_t deadline_ms_ = 0;
  uint64_t deadline_us_ = 0;
  bool deadline_passed_ = false;
  Status round1_outcome_;
  uint32_t last_report_round_ = 0;
  bool resend_report_ = false;
};

}  // namespace nodefl::fedwalk
