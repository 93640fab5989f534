// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/roles/peer_key_table.h"

#include "nodefl/core/sorted_search.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::roles {
namespace {

// Neighbours are kept sorted by id (Bind checks), so lookups bisect.
constexpr auto kPeerId = [](const KeyedPeer& p) { return p.id; };

}  // namespace

PeerKeyTable::PeerKeyTable(const tls::TlsCredentials& credentials, crypto::RandomFunction random,
                             void* random_context)
    : credentials_(credentials), random_(random), random_context_(random_context) {}

Status PeerKeyTable::Bind(uint32_t own_id, Span<KeyedPeer> neighbours, Span<KeyedPeer> cache) {
  for (size_t i = 0; i < neighbours.size(); ++i) {
    if (neighbours[i].id == own_id) return Status::InvalidArgument();
    if (i > 0 && neighbours[i - 1].id >= neighbours[i].id) return Status::InvalidArgument();
  }
  own_id_ = own_id;
  neighbours_ = neighbours;
  cache_ = cache;
  wanted_ = outstanding_ = 0;
  for (KeyedPeer& p : neighbours_) ResetJobState(&p);
  for (KeyedPeer& p : cache_) {
    p.pair_keys.Wipe();
    ResetJobState(&p);
    p.state = PeerKeyState::kUnused;
  }
  return Status::Ok();
}

void PeerKeyTable::ResetJobState(KeyedPeer* p) {
  p->job_keys.Wipe();
  p->window = seal::ReplayWindow();
  p->waiting = 0;
  p->last_used = 0;
  p->state = PeerKeyState::kNone;
  // Pair keys derived for another pair (the app re-bound the record, or
  // the device's id changed) are of no use.
  const uint32_t low = p->id < own_id_ ? p->id : own_id_;
  const uint32_t high = p->id < own_id_ ? own_id_ : p->id;
  if (p->pair_keys.valid && (p->pair_keys.low_id != low || p->pair_keys.high_id != high)) p->pair_keys.Wipe();
}

void PeerKeyTable::SetState(KeyedPeer* p, PeerKeyState state) {
  if (p->state == PeerKeyState::kWanted) --wanted_;
  if (p->state == PeerKeyState::kRequested) --outstanding_;
  p->state = state;
  if (state == PeerKeyState::kWanted) ++wanted_;
  if (state == PeerKeyState::kRequested) ++outstanding_;
}

bool PeerKeyTable::IsNeighbour(uint32_t id) const { return FindSorted(neighbours_, id, kPeerId) != nullptr; }

KeyedPeer* PeerKeyTable::Find(uint32_t id) {
  if (KeyedPeer* p = FindSorted(neighbours_, id, kPeerId)) return p;
  for (KeyedPeer& p : cache_) {
    if (p.state != PeerKeyState::kUnused && p.id == id) return &p;
  }
  return nullptr;
}

KeyedPeer* PeerKeyTable::FindOrAdd(uint32_t id) {
  if (id == own_id_) return nullptr;
  if (KeyedPeer* found = Find(id)) return found;
  KeyedPeer* victim = nullptr;
  for (KeyedPeer& p : cache_) {
    if (p.state == PeerKeyState::kUnused) {
      victim = &p;
      break;
    }
    // Pinned: a held walk needs it, or its answer is on the way.
    if (p.waiting > 0 || p.state == PeerKeyState::kRequested) continue;
    if (victim == nullptr || p.last_used < victim->last_used) victim = &p;
  }
  if (victim == nullptr) return nullptr;
  if (victim->state != PeerKeyState::kUnused) ++evictions_;
  SetState(victim, PeerKeyState::kNone);
  victim->pair_keys.Wipe();
  victim->id = id;
  ResetJobState(victim);
  Touch(victim);
  return victim;
}

void PeerKeyTable::Want(KeyedPeer* p) {
  if (p->state == PeerKeyState::kNone) SetState(p, PeerKeyState::kWanted);
}

size_t PeerKeyTable::FillRequest(nodefl_wire_PeerKeyRequest* request, uint32_t max_outstanding) {
  const size_t capacity = sizeof(request->device_ids) / sizeof(request->device_ids[0]);
  size_t added = 0;
  auto take = [&](KeyedPeer& p) {
    if (p.state != PeerKeyState::kWanted || request->device_ids_count >= capacity ||
        outstanding_ >= max_outstanding) {
      return;
    }
    request->device_ids[request->device_ids_count++] = p.id;
    SetState(&p, PeerKeyState::kRequested);
    ++added;
  };
  // Cache records first: a walk waits on each of them, while neighbours'
  // keys are mostly fetched ahead in round 1.
  for (KeyedPeer& p : cache_) take(p);
  for (KeyedPeer& p : neighbours_) {
    if (wanted_ == 0) break;
    take(p);
  }
  return added;
}

Status PeerKeyTable::Derive(KeyedPeer* p, ConstByteSpan certificate_der, ConstByteSpan peer_job_key) {
  if (own_key_ == nullptr || !own_key_->valid()) return Status::FailedPrecondition();
  if (!p->pair_keys.valid) {
    // A neighbour's certificate is checked once; its pair keys stay.
    NODEFL_TRY(source_.Derive(credentials_, certificate_der, own_id_, p->id, random_, random_context_,
                               &p->pair_keys));
  }
  return source_.DeriveJob(p->pair_keys, *own_key_, own_id_, peer_job_key, random_, random_context_,
                           &p->job_keys);
}

void PeerKeyTable::EndJob() {
  auto end = [this](KeyedPeer& p) {
    p.job_keys.Wipe();
    // Nothing of this job can be opened or sealed any more.
    if (p.state != PeerKeyState::kUnused && p.state != PeerKeyState::kNone) SetState(&p, PeerKeyState::kFailed);
  };
  for (KeyedPeer& p : neighbours_) end(p);
  for (KeyedPeer& p : cache_) end(p);
  own_key_ = nullptr;
}

void PeerKeyTable::Settle(KeyedPeer* p, Status derived) {
  if (derived.ok()) {
    SetState(p, PeerKeyState::kReady);
    return;
  }
  p->pair_keys.Wipe();
  p->job_keys.Wipe();
  ++key_failures_;
  SetState(p, PeerKeyState::kFailed);
}

KeyedPeer* PeerKeyTable::OnCertificate(const nodefl_wire_PeerCertificate& cert) {
  KeyedPeer* p = Find(cert.device_id);
  // Certificates nobody asked for (or a second answer) are ignored, never
  // trusted.
  if (p == nullptr || (p->state != PeerKeyState::kRequested && p->state != PeerKeyState::kDirectory)) {
    return nullptr;
  }
  Settle(p, cert.found ? Derive(p, protocol::BytesOf(cert.certificate_der), protocol::BytesOf(cert.job_key))
                       : Status::NotFound());
  return p;
}

void PeerKeyTable::EndDirectory() {
  for (KeyedPeer& p : neighbours_) {
    if (p.state == PeerKeyState::kDirectory) Settle(&p, Status::NotFound());
  }
}

void PeerKeyTable::OnRestart() {
  auto again = [this](KeyedPeer& p) {
    if (p.state == PeerKeyState::kRequested) SetState(&p, PeerKeyState::kWanted);
  };
  for (KeyedPeer& p : neighbours_) again(p);
  for (KeyedPeer& p : cache_) again(p);
}

Status SendWantedKeyRequests(PeerKeyTable& table, device::DeviceSession& session, uint64_t job_id, uint32_t round,
                             uint32_t max_outstanding, uint32_t* messages) {
  while (table.has_wanted() && session.CanSend() && table.outstanding() < max_outstanding) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_peer_key_request_tag, job_id, round);
    if (table.FillRequest(&m.body.peer_key_request, max_outstanding) == 0) break;
    NODEFL_TRY(session.Send(m));
    if (messages != nullptr) ++*messages;
  }
  return Status::Ok();
}

}  // namespace nodefl::roles
