// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PeerKeyTable: the end-to-end keys a role holds for its peers in one job:
// one record per neighbour, for the whole job, and a bounded cache of
// records for non-neighbours it must reach on demand (FedWalk's walk role:
// walks sent to a predicted 2-hop u', walks a jump brings from a device
// that is not a neighbour; Lumos's comparisons with candidate-vertex-set
// members). Roles that only ever talk to neighbours (neighbour echo, the
// greedy comparisons) use peer_key_requests.h directly.
//
// Keys are obtained as in the neighbour-echo job (echo/neighbour_echo.h):
// the server answers PeerKeyRequest with PeerCertificate (certificate and
// the peer's announced job key); the device checks each certificate against
// the pinned deployment CA and the expected id
// (seal::VerifyPeerCertificate), derives the long-term pair keys by ECDH
// (seal::DerivePairKeys) and from them and both ephemeral job keys this
// job's keys (seal::DeriveJobKeys). Every job asks for every peer it needs
// (job keys are new in each job); a neighbour's pair keys survive across
// jobs, so its certificate is checked once; a cached non-neighbour's go
// with its record.
//
// Cache eviction: least recently used among the records that no held
// message waits on and that have no certificate request in flight (evicting
// those would strand a message or mis-account a request). When every record
// is pinned, a new non-neighbour gets no record and the role decides what
// the message that needed it becomes (the walk role ends the walk,
// fedwalk/walk_role.h).
//
// Counters and replays. A role using this table must seal with one
// device-wide counter per job (as fedwalk/walk_role.h does), so counters
// never repeat under any key, even after a
// record was evicted and its keys re-derived. The receiving side keeps a
// seal::ReplayWindow per record; an evicted record's window is forgotten,
// so a message its sender sealed before the eviction could be replayed
// once more by the relay after the record is re-created; the role must
// tolerate that (the walk job does: a replayed walk costs the device
// encodings, recorded in its ledger like any other, and the server sees a
// duplicate walk id).
// Size the cache so eviction is rare.
//
// Memory: sizeof(KeyedPeer) (about 200 bytes) per neighbour and per cache
// record, all caller-provided; no heap in this code (certificate checks and
// ECDH allocate inside MbedTLS, see sdk/seal).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::roles {

enum class PeerKeyState : uint8_t {
  kUnused,     // cache record: free
  kNone,       // not needed so far
  kWanted,     // needed: a certificate request is due
  kRequested,  // a request is in flight
  kDirectory,  // awaiting its entry in the job's peer directory (neighbours)
  kReady,      // job keys derived
  kFailed,     // not found, or failed verification or derivation
};

struct KeyedPeer {
  uint32_t id = 0;
  PeerKeyState state = PeerKeyState::kUnused;
  uint16_t waiting = 0;    // held messages (walks, comparisons) that need this record's keys
  uint32_t last_used = 0;  // LRU stamp (cache records)
  seal::PairKeys pair_keys;  // long-term (ECDH)
  seal::PairKeys job_keys;   // this job's
  seal::ReplayWindow window;
};

class PeerKeyTable {
 public:
  PeerKeyTable(const tls::TlsCredentials& credentials, crypto::RandomFunction random, void* random_context);

  // Binds the records. neighbours[i].id must be sorted ascending, without
  // duplicates, without own_id (kInvalidArgument otherwise); the records'
  // pair keys are kept if their id is unchanged since the last Bind.
  Status Bind(uint32_t own_id, Span<KeyedPeer> neighbours, Span<KeyedPeer> cache);

  // Replaces certificate check + ECDH (seal/pair_key_source.h); for hosts
  // of many emulated devices only.
  void SetPairKeySource(const seal::PairKeySource& source) { source_ = source; }

  // A new job whose ephemeral key is `own_key` (kept by the caller for the
  // whole job): job keys wiped, windows reset; cache records freed.
  // Neighbours that take part (`wanted(index)`) become kWanted, or
  // kDirectory when their keys come from the job's peer directory
  // (`directory`); the others kNone.
  template <typename Wanted>
  void StartJob(const seal::JobKeyPair& own_key, bool directory, Wanted wanted);
  // The peer directory ended: neighbours it did not list fail.
  void EndDirectory();
  // The job is over: every job key wiped (the caller wipes its own key).
  void EndJob();

  // The record of a neighbour or a cached peer; nullptr if none.
  KeyedPeer* Find(uint32_t id);
  bool IsNeighbour(uint32_t id) const;
  // Find, or a new cache record (kNone) for `id`, evicting as described
  // above; nullptr when the cache is full of pinned records (or has none).
  KeyedPeer* FindOrAdd(uint32_t id);
  // Marks a use (LRU).
  void Touch(KeyedPeer* peer) { peer->last_used = ++clock_; }
  // Marks a record as needed: kNone -> kWanted.
  void Want(KeyedPeer* peer);

  // Fills a PeerKeyRequest with up to its capacity of kWanted ids (which
  // become kRequested), respecting `max_outstanding` requests in flight.
  // Returns the number of ids added.
  size_t FillRequest(nodefl_wire_PeerKeyRequest* request, uint32_t max_outstanding);
  // A PeerCertificate for this job (an answer, or a directory entry).
  // Returns the record it settled (kReady or kFailed), or nullptr for an
  // answer nobody asked for or an entry nobody awaits (ignored).
  KeyedPeer* OnCertificate(const nodefl_wire_PeerCertificate& certificate);
  // The connection broke: requests in flight are lost and asked again.
  void OnRestart();

  bool has_wanted() const { return wanted_ > 0; }
  uint32_t outstanding() const { return outstanding_; }
  uint32_t key_failures() const { return key_failures_; }
  uint32_t evictions() const { return evictions_; }
  Span<KeyedPeer> neighbours() { return neighbours_; }

 private:
  Status Derive(KeyedPeer* peer, ConstByteSpan certificate_der, ConstByteSpan peer_job_key);
  // kReady on success; kFailed (pair keys wiped, counted) otherwise.
  void Settle(KeyedPeer* peer, Status derived);
  // Moves a record to `state`, keeping the kWanted/kRequested counts.
  void SetState(KeyedPeer* peer, PeerKeyState state);
  void ResetJobState(KeyedPeer* peer);

  const tls::TlsCredentials& credentials_;
  crypto::RandomFunction random_;
  void* random_context_;
  seal::PairKeySource source_;
  uint32_t own_id_ = 0;
  Span<KeyedPeer> neighbours_;
  Span<KeyedPeer> cache_;
  const seal::JobKeyPair* own_key_ = nullptr;
  uint32_t clock_ = 0;
  uint32_t wanted_ = 0;       // records in kWanted
  uint32_t outstanding_ = 0;  // records in kRequested
  uint32_t key_failures_ = 0;
  uint32_t evictions_ = 0;
};

template <typename Wanted>
void PeerKeyTable::StartJob(const seal::JobKeyPair& own_key, bool directory, Wanted wanted) {
  own_key_ = &own_key;
  wanted_ = outstanding_ = key_failures_ = evictions_ = 0;
  for (KeyedPeer& p : cache_) {
    p.pair_keys.Wipe();
    ResetJobState(&p);
    p.state = PeerKeyState::kUnused;
  }
  for (size_t i = 0; i < neighbours_.size(); ++i) {
    KeyedPeer& p = neighbours_[i];
    ResetJobState(&p);
    const PeerKeyState taking = directory ? PeerKeyState::kDirectory : PeerKeyState::kWanted;
    SetState(&p, wanted(i) ? taking : PeerKeyState::kNone);
  }
}

// Sends PeerKeyRequests for `table`'s wanted records while the session can
// send and fewer than `max_outstanding` are in flight; `*messages`
// (optional) counts the requests sent.
Status SendWantedKeyRequests(PeerKeyTable& table, device::DeviceSession& session, uint64_t job_id, uint32_t round,
                             uint32_t max_outstanding, uint32_t* messages = nullptr);

}  // namespace nodefl::roles
