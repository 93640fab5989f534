// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// NeighbourEchoRole: the device side of the plumbing-proof job
// (JOB_KIND_NEIGHBOUR_ECHO; server side: server/jobs/neighbour_echo_job.h).
//
//   round 1 (keys): draw this job's ephemeral key and announce it (JobKey,
//     roles/job_key_announcer.h), get every neighbour's certificate and job
//     key (PeerKeyRequest, batches of up to 32; or, when JobStart says
//     peer_directory, from the peer directory artefact, filtered locally:
//     wire/peer_directory.h; neighbours missing from it fail), verify
//     each certificate against the pinned deployment CA and the expected
//     device id, derive pairwise keys (ECDH; kept across jobs), then this
//     job's keys (seal/job_keys.h); report JobReport{expected = number of
//     neighbours}.
//   round 2 (send): seal one message to every neighbour and send it through
//     the relay; open and check every message that arrives; report the counts
//     once everything expected has arrived or the round's deadline passed.
//     A peers-gone record from the server (job_format.h) names neighbours
//     it gave up on: their missing messages are abandoned (counted, no
//     longer waited for), so the device reports without waiting for its
//     deadline; a message that still comes from one is received as usual.
//
// The message a device sends to neighbour u is fully determined by (job,
// sender, receiver), so the receiver checks content as well as the AEAD tag:
// "arrived intact" means both.
//
// Memory: one EchoPeer per neighbour (caller-provided span, ~200 bytes each),
// and the role object itself (~1.5 KiB: the peer directory's entry buffer);
// no heap in this code. Certificate verification and ECDH run inside MbedTLS,
// which allocates internally in Debian's build (see sdk/seal).
#pragma once

#include <cstdint>

#include "nodefl/config.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/peer_directory.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/protocol/echo/job_format.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::echo {

// JobStart.parameters and the message layout: protocol/echo/job_format.h.
// Certificate requests in flight per device: keeps the server's answer
// queue and the device's verification work per moment bounded and fair.
inline constexpr uint32_t kEchoMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;

struct EchoPeer {
  uint32_t id = 0;
  seal::PairKeys pair_keys;  // long-term, from ECDH; kept across jobs
  seal::PairKeys job_keys;   // this job's keys (with both ephemeral keys)
  seal::ReplayWindow window;
  uint64_t next_counter = 1;
  uint32_t sent = 0;      // messages sealed to this peer in this job
  uint32_t received = 0;  // verified messages from this peer in this job
  bool key_requested = false;
  bool key_answered = false;  // a PeerCertificate (found or not) arrived
  bool key_ready = false;
  bool gone = false;  // the server declared it gone in this job
};

class NeighbourEchoRole final : public device::Role {
 public:
  struct Stats {
    uint32_t expected = 0;
    uint32_t sent = 0;
    uint32_t received = 0;
    uint32_t duplicates = 0;
    uint32_t rejected = 0;
    uint32_t key_failures = 0;
    // Messages no longer waited for: their sender was declared gone.
    uint32_t abandoned = 0;
  };

  // `peers[i].id` must hold the neighbour ids, sorted ascending, no
  // duplicates, not the device itself (Init checks). `credentials` holds the
  // device's key and the pinned CA; `random` feeds ECDH blinding.
  NeighbourEchoRole(uint32_t own_id, Span<EchoPeer> peers, const tls::TlsCredentials& credentials,
                    crypto::RandomFunction random, void* random_context);

  Status Init();

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  // Round 2 finished on this device (reported).
  bool finished() const { return phase_ == Phase::kDone; }
  uint32_t round() const;
  // Round 1 was reported (keys settled).
  bool keys_reported() const { return phase_ >= Phase::kKeysReported; }
  const Stats& stats() const { return stats_; }

  // The plaintext of message `index` (1, 2, ...) that `src` sends to `dst`
  // in job `job_id`; out.size() is the payload size (>= kEchoHeaderBytes).
  // Exposed for tests.
  static void ExpectedPlaintext(uint64_t job_id, uint32_t src, uint32_t dst, uint32_t index,
                                ByteSpan out);
  uint32_t messages_per_edge() const { return messages_per_edge_; }
  uint32_t payload_bytes() const { return payload_bytes_; }

 private:
  enum class Phase : uint8_t { kIdle, kKeys, kKeysReported, kSend, kDone };

  EchoPeer* FindPeer(uint32_t id);
  Status StartJob(const nodefl_wire_Envelope& message, uint64_t now_us);
  Status HandleCertificate(const nodefl_wire_PeerCertificate& cert);
  Status HandleDirectoryChunk(const nodefl_wire_Envelope& message);
  static void OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry);
  Status HandleDelivery(const nodefl_wire_Envelope& message);
  Status HandlePeersGone(const nodefl_wire_Envelope& message);
  Status SendKeyRequests(device::DeviceSession& session);
  Status SendSealed(device::DeviceSession& session);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);
  bool AllKeysSettled() const;

  uint32_t own_id_;
  Span<EchoPeer> peers_;
  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;

  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  roles::JobKeyAnnouncer job_key_;
  bool directory_ = false;  // keys come from the peer directory
  protocol::PeerDirectoryReceiver directory_rx_{&OnDirectoryEntry, this};
  uint32_t messages_per_edge_ = 1;
  uint32_t payload_bytes_ = kEchoHeaderBytes;
  uint64_t deadline_us_ = 0;
  uint64_t now_us_ = 0;
  bool deadline_passed_ = false;
  size_t request_cursor_ = 0;
  size_t send_cursor_ = 0;
  uint32_t send_pass_ = 0;
  uint32_t keys_settled_ = 0;
  uint32_t outstanding_requests_ = 0;
  // The last JobReport sent, so a reconnect can repeat it (the server treats
  // a repeat as a no-op).
  roles::ReportRepeater report_;  // the latest report, repeated when the server may lack it
  Stats stats_;
};

}  // namespace nodefl::echo
