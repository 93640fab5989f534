// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SecureCompareRole: the device side of JOB_KIND_SECURE_COMPARE
// (compare_job_format.h; server side: server/jobs secure_compare_job.h).
//
//   round 1: draw and announce this job's ephemeral key, fetch every
//     neighbour's certificate and job key (or take them from the peer
//     directory when JobStart says so, wire/peer_directory.h), derive the
//     pair's job keys
//     (seal/job_keys.h, as the neighbour-echo job does), ask the server for
//     a session with each neighbour of higher id, report;
//   round 2: run the sessions the server starts (at most one per
//     CompareContext at once), exchanging ComparisonSession messages with
//     the peer through the relay, sealed with the pair's job keys; report
//     each session's outcome (with the result bits when the job makes them
//     public);
//   round 3: report the totals.
//
// The value compared is the device's own (its degree or round(ln degree),
// from the neighbour list it was given); it never leaves the device except
// through the comparison protocol.
//
// A peer's first message can overtake the server's kSessionStart for the
// same session (they travel different queues); such a message is kept in a
// small early-message buffer until the session starts.
//
// Memory: one ComparePeer per neighbour, the CompareContexts (each a
// ComparisonSession plus slots and tables for its comparisons), all
// caller-provided; one 4 KiB scratch inside the role. No heap in this code
// (MbedTLS allocates for certificate checks, ECDH and OT).
#pragma once

#include <cstdint>

#include "nodefl/compare/comparison_session.h"
#include "nodefl/config.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/protocol/peer_directory.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/seal/seal.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::compare {

inline constexpr uint32_t kCompareMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;
inline constexpr size_t kEarlyMessageBytes = 128;
inline constexpr size_t kEarlyMessages = NODEFL_COMPARE_EARLY_MESSAGES;
// Sealed plaintext: session id (4) | comparison message.
inline constexpr size_t kCompareMessageBytes = seal::kMaxSealPlaintextBytes - 4;

// How this device's comparison with one neighbour ended, from this
// device's side (own value against the neighbour's), as it saw it. The
// server may still settle a session the device saw done as aborted (the
// other party aborted); each endpoint then keeps the edge by its own view,
// which covers the edge either way (Lumos Alg. 1 keeps it on a tie or an
// abort, and a done comparison tells both the same result).
enum class PeerOutcome : uint8_t { kNone, kGreater, kEqual, kLess, kAborted };

struct ComparePeer {
  uint32_t id = 0;
  PeerOutcome outcome = PeerOutcome::kNone;  // the latest single-comparison session with this peer
  seal::PairKeys pair_keys;  // long-term, kept across jobs
  seal::PairKeys job_keys;   // this job's (with both ephemeral keys)
  seal::ReplayWindow window;
  uint64_t next_counter = 1;
  bool key_requested = false;
  bool key_answered = false;
  bool key_ready = false;
};

// Memory for one session at a time: its ComparisonSession and room for
// up to slots.size() comparisons (tables for party A).
struct CompareContext {
  void Bind(Span<ComparisonSlot> s, ByteSpan t) {
    slots = s;
    tables = t;
  }
  ComparisonSession session;
  Span<ComparisonSlot> slots;
  ByteSpan tables;
  uint32_t id = 0;
  uint32_t peer = 0;
  uint16_t count = 0;
  Role role = Role::kA;
  bool busy = false;
  bool reported = false;
  bool early_result = false;  // refused at start: report without running
  Status refusal;
};

class SecureCompareRole final : public device::Role {
 public:
  struct Stats {
    uint32_t requested = 0;     // sessions asked for in round 1
    uint32_t started = 0;
    uint32_t done = 0;
    uint32_t aborted = 0;
    uint32_t refused = 0;       // session starts that could not run
    uint32_t messages_sent = 0;
    uint32_t messages_received = 0;
    uint32_t rejected = 0;      // relay messages that failed authentication or matched nothing
    uint32_t duplicates = 0;
    uint32_t key_failures = 0;
    uint64_t bytes_sent = 0;    // comparison messages (before sealing)
  };

  // `peers[i].id`: the neighbours, ascending, without the device. `random`
  // draws the OT secrets, masks and triples and blinds ECDH.
  SecureCompareRole(uint32_t own_id, Span<ComparePeer> peers, Span<CompareContext> contexts,
                    const tls::TlsCredentials& credentials, crypto::RandomFunction random, void* random_context);

  // kInvalidArgument for unsorted peers or contexts without slots;
  // kFailedPrecondition for credentials without identity or CA.
  Status Init();
  // See seal/pair_key_source.h (hosts of many emulated devices only).
  void SetPairKeySource(const seal::PairKeySource& source) { key_source_ = source; }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  uint32_t round() const;
  const Stats& stats() const { return stats_; }
  // The value this device compares in the current job.
  uint32_t value() const { return value_; }
  // The neighbours, their keys and outcomes (read by the jobs that follow
  // this one, lumos/trim_binding.h). Not to be used while a job runs.
  Span<const ComparePeer> peers() const { return Span<const ComparePeer>(peers_.data(), peers_.size()); }
  // A job that follows this one on the same pair keys (the Lumos trimming
  // job, lumos/trim_binding.h) takes them over: with this set, the job's
  // keys outlive its end until ForgetJobKeys(). Otherwise they are wiped
  // when the job ends (forward secrecy, seal/job_keys.h).
  void set_hand_over_keys(bool on) { hand_over_keys_ = on; }
  void ForgetJobKeys();
  uint64_t job_id() const { return job_id_; }
  // round(ln(degree)), 0 for degree 0 (Lumos Eq. 15).
  static uint32_t LogDegree(uint32_t degree);

 private:
  enum class Phase : uint8_t { kIdle, kKeys, kKeysReported, kSessions, kDone };
  struct Early {
    uint32_t session = 0;
    uint32_t src = 0;
    uint16_t size = 0;
    bool used = false;
    uint8_t bytes[kEarlyMessageBytes] = {};
  };

  ComparePeer* FindPeer(uint32_t id);
  Status StartJob(const nodefl_wire_Envelope& message);
  void HandleCertificate(const nodefl_wire_PeerCertificate& cert);
  Status HandleDirectoryChunk(const nodefl_wire_Envelope& message);
  static void OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry);
  void HandleDelivery(const nodefl_wire_Envelope& message);
  void HandleData(const nodefl_wire_JobData& data);
  void StartSession(const SessionStart& start);
  Status SendKeyRequests(device::DeviceSession& session);
  Status SendSessionRequests(device::DeviceSession& session);
  Status Pump(CompareContext& c, device::DeviceSession& session);
  Status SendResult(CompareContext& c, device::DeviceSession& session);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);
  void DeriveTag(uint32_t session, uint32_t a, uint32_t b, ot::OtTag* tag) const;
  bool AllKeysSettled() const { return keys_settled_ == peers_.size(); }

  uint32_t own_id_;
  Span<ComparePeer> peers_;
  Span<CompareContext> contexts_;
  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;
  seal::PairKeySource key_source_;
  bool hand_over_keys_ = false;

  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  roles::JobKeyAnnouncer job_key_;
  bool directory_ = false;  // keys come from the peer directory
  protocol::PeerDirectoryReceiver directory_rx_{&OnDirectoryEntry, this};
  CompareJobParameters params_;
  ComparisonPlan plan_;
  uint32_t value_ = 0;
  size_t request_cursor_ = 0;
  uint32_t outstanding_requests_ = 0;
  uint32_t keys_settled_ = 0;
  size_t session_request_cursor_ = 0;
  bool session_requests_sent_ = false;
  roles::ReportRepeater report_;  // the latest report, repeated when the server may lack it
  bool report_due_ = false;  // round 3 started
  Early early_[kEarlyMessages];
  // One sealed plaintext, or a session's input values.
  uint32_t scratch_words_[seal::kMaxSealPlaintextBytes / 4] = {};
  uint8_t* const scratch_ = reinterpret_cast<uint8_t*>(scratch_words_);
  Stats stats_;
};

}  // namespace nodefl::compare
