// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosMcmcRole: the device side of JOB_KIND_LUMOS_MCMC, Lumos Alg. 2 (MCMC
// with Eq. 17/18) and Alg. 3 (candidate vertex set) as the paper states
// them, every workload comparison made by the secure two-party comparison
// of sdk/compare (contract: protocol/lumos/mcmc_format.h; server:
// server/jobs lumos_mcmc_job.h; docs/lumos.md). Paper mode only: the
// server learns every comparison's result.
//
// The device compares its workload (the number of neighbours it keeps) in
// the sessions the server starts, with neighbours and, for Alg. 3's
// pairwise comparisons among candidates, with non-neighbours, whose keys
// it fetches when such a session starts (roles::PeerKeyTable). When the
// server picks it as the maximum it moves k of its kept leaves to their
// other endpoints (Eq. 17) and, if Eq. 18 rejects, takes them back.
//
// Coverage (Lumos Eq. 10) holds at every moment: a receiver keeps a given
// edge before it answers kTaken, and the mover stops keeping it only on that
// answer; a revert keeps the edge again before it sends kReturn, and the
// receiver restores its earlier state only then. A lost answer leaves the
// edge kept by both.
//
// Memory, all caller-provided: one McmcPeer and one roles::KeyedPeer per
// neighbour, a small cache of KeyedPeers for non-neighbours, the
// McmcContexts (a ComparisonSession and its slots each). No heap in this
// code (certificate checks, ECDH and OT allocate inside MbedTLS).
#pragma once

#include <cstdint>

#include "nodefl/compare/comparison_session.h"
#include "nodefl/config.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/lumos/mcmc_format.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/peer_key_table.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/seal.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::lumos {

inline constexpr uint32_t kMcmcMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;
inline constexpr size_t kMcmcEarlyMessages = NODEFL_COMPARE_EARLY_MESSAGES;
// A comparison's first messages are small; a held message is kept sealed
// (its sender's keys may not be derived yet), so room for the seal too.
inline constexpr size_t kMcmcEarlyPayloadBytes = 128;
inline constexpr size_t kMcmcEarlyBytes = kMcmcEarlyPayloadBytes + 5 + seal::kSealOverheadBytes;
// Sealed plaintext of a comparison message: type (1) | session id (4) | message.
inline constexpr size_t kMcmcCompareMessageBytes = seal::kMaxSealPlaintextBytes - 5;

// This device's part in a move along one edge.
enum class GiveState : uint8_t {
  kNone,
  kGiveDue,     // picked by a move: kGive not sent yet
  kGiven,       // kGive sent, kTaken awaited (still kept here)
  kTaken,       // the neighbour keeps it now: no longer kept here
  kReturnDue,   // a revert: kept here again, kReturn not sent yet
  kReturnSent,  // kReturned awaited
  kReturned,
};

struct McmcPeer {
  uint32_t id = 0;
  bool keep = false;  // this device keeps the edge: the neighbour is a leaf of its tree
  // The latest kGive from this neighbour and what this device kept before
  // it (a kReturn of the same iteration restores it).
  uint32_t took_iteration = 0;
  bool kept_before_take = false;
  GiveState give = GiveState::kNone;
  // Answers owed to the neighbour (iteration; 0: none).
  uint32_t taken_due = 0;
  uint32_t returned_due = 0;
};

// One session's memory (as compare::CompareContext) and what it waits for.
struct McmcContext {
  void Bind(Span<compare::ComparisonSlot> s, ByteSpan t) {
    slots = s;
    tables = t;
  }
  compare::ComparisonSession session;
  Span<compare::ComparisonSlot> slots;
  ByteSpan tables;
  uint32_t id = 0;
  uint32_t peer = 0;
  uint16_t count = 0;
  compare::Role role = compare::Role::kA;
  McmcValue value = McmcValue::kWorkload;
  bool busy = false;
  bool waiting_keys = false;  // started by the server, the peer's keys not derived yet
  bool early_result = false;  // refused: report without running
  Status refusal;
};

class LumosMcmcRole final : public device::Role {
 public:
  struct Stats {
    uint32_t sessions_started = 0;
    uint32_t sessions_done = 0;
    uint32_t sessions_aborted = 0;  // aborted or refused
    uint32_t moves = 0;             // kMcmcMove answered
    uint32_t reverts = 0;           // kMcmcRevert answered
    uint32_t given = 0;             // edges given away and taken
    uint32_t taken = 0;             // kGive received
    uint32_t messages_sent = 0;
    uint32_t messages_received = 0;
    uint32_t rejected = 0;
    uint32_t duplicates = 0;
    uint32_t key_requests = 0;
  };

  // `peers[i].id` and `neighbour_keys[i].id`: the neighbours, ascending,
  // the same in both. `cache`: records for non-neighbours (Alg. 3's
  // candidates; 8 is plenty for karate-sized graphs, more for larger ones).
  LumosMcmcRole(uint32_t own_id, Span<McmcPeer> peers, Span<roles::KeyedPeer> neighbour_keys,
                Span<roles::KeyedPeer> cache, Span<McmcContext> contexts, const tls::TlsCredentials& credentials,
                crypto::RandomFunction random, void* random_context);

  // kInvalidArgument for unsorted or differing neighbour lists or contexts
  // without slots; kFailedPrecondition for credentials without identity or
  // CA, or no random function.
  Status Init();
  void SetPairKeySource(const seal::PairKeySource& source) { keys_.SetPairKeySource(source); }
  // The peers' keep flags hold the starting orientation (mcmc_binding.h,
  // or the caller in tests); greedy_workload is reported in the summary.
  void Bind(uint32_t greedy_workload);
  bool bound() const { return bound_; }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  uint32_t workload() const;
  uint32_t workload_before_move() const { return before_move_; }
  const Stats& stats() const { return stats_; }
  Span<const McmcPeer> peers() const { return Span<const McmcPeer>(peers_.data(), peers_.size()); }
  // Neighbours not kept although no kTaken said the other end keeps them
  // (0 unless the protocol is broken).
  uint32_t Uncovered() const;

 private:
  enum class Phase : uint8_t { kIdle, kKeys, kKeysReported, kIterate, kReporting, kDone };
  struct Early {
    uint32_t src = 0;
    uint32_t session = 0;  // opened only
    uint16_t size = 0;
    bool used = false;
    bool opened = false;  // bytes hold the comparison message; else the sealed envelope body
    uint8_t bytes[kMcmcEarlyBytes] = {};
  };

  McmcPeer* FindPeer(uint32_t id);
  Status StartJob(const nodefl_wire_Envelope& message);
  void ResetJobState();
  void HandleCertificate(const nodefl_wire_PeerCertificate& certificate);
  void HandleData(const nodefl_wire_JobData& data);
  void StartSession(const McmcSessionStart& start);
  void RunSession(McmcContext& c);
  void Refuse(McmcContext& c, Status why);
  void HandleDelivery(const nodefl_wire_Envelope& message);
  // Opens `sealed` from `peer` (ready) and acts on it.
  void OpenAndDispatch(roles::KeyedPeer& peer, ConstByteSpan sealed);
  void OnCompareMessage(uint32_t src, uint32_t session, ConstByteSpan payload);
  void OnLeafMessage(uint32_t src, const McmcLeafMessage& m);
  void HoldSealed(uint32_t src, ConstByteSpan sealed);
  void BeginMove(uint32_t iteration);
  void BeginRevert(uint32_t iteration);
  uint32_t RandomBelow(uint32_t n);
  Status SendSealed(uint32_t dst, ConstByteSpan plaintext, device::DeviceSession& session);
  Status SendLeaf(McmcPeer& p, McmcLeafKind kind, uint32_t iteration, device::DeviceSession& session);
  Status FlushLeaves(device::DeviceSession& session);
  Status Pump(McmcContext& c, device::DeviceSession& session);
  Status SendResult(McmcContext& c, device::DeviceSession& session);
  Status SendKeyRequests(device::DeviceSession& session);
  Status SendMoveDone(device::DeviceSession& session);
  Status SendKept(device::DeviceSession& session);
  Status SendSummary(device::DeviceSession& session);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);
  void DeriveTag(uint32_t session, uint32_t a, uint32_t b, ot::OtTag* tag) const;

  uint32_t own_id_;
  Span<McmcPeer> peers_;
  Span<McmcContext> contexts_;
  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;
  roles::PeerKeyTable keys_;
  Span<roles::KeyedPeer> neighbour_keys_;
  Span<roles::KeyedPeer> cache_;
  bool bound_ = false;
  uint32_t greedy_workload_ = 0;

  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  roles::JobKeyAnnouncer job_key_;
  McmcRoundParameters params_;
  compare::ComparisonPlan plan_;
  uint64_t next_counter_ = 1;  // one counter for every key of the job (peer_key_table.h)
  uint32_t neighbour_keys_settled_ = 0;
  bool refused_ = false;  // no greedy result: round 1 reports kFailedPrecondition
  // The current move (Alg. 2 lines 3-5) or its revert.
  uint32_t move_iteration_ = 0;
  bool reverting_ = false;
  uint32_t before_move_ = 0;
  uint32_t move_count_ = 0;   // edges picked (or being taken back)
  uint32_t awaiting_ = 0;     // kTaken or kReturned still to come
  uint32_t leaves_due_ = 0;   // leaf messages to send (gives, returns and answers)
  bool move_done_due_ = false;
  // The report round.
  size_t kept_cursor_ = 0;
  bool summary_sent_ = false;
  roles::ReportRepeater report_;
  Early early_[kMcmcEarlyMessages];
  // One sealed plaintext, or a session's input values.
  uint32_t scratch_words_[seal::kMaxSealPlaintextBytes / 4] = {};
  uint8_t* const scratch_ = reinterpret_cast<uint8_t*>(scratch_words_);
  Stats stats_;
};

}  // namespace nodefl::lumos
