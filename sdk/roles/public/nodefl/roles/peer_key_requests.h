// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Asking the server for neighbours' certificates (PeerKeyRequest, up to its
// capacity of ids per message), shared by the roles that key every
// neighbour before a job's exchange (neighbour echo, secure compare).
// `Peer` needs `id`, `key_requested` and `key_answered`. Roles that key
// non-neighbours on demand use peer_key_table.h instead.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"

namespace nodefl::roles {

// Sends requests for peers[*cursor ...] not yet requested, marking them,
// while the session can send and fewer than `max_outstanding` answers are
// awaited (*outstanding counts them; the role decrements it per answer).
template <typename Peer>
Status SendPeerKeyRequests(device::DeviceSession& session, uint64_t job_id, uint32_t round, Span<Peer> peers,
                           size_t* cursor, uint32_t* outstanding, uint32_t max_outstanding) {
  while (*cursor < peers.size() && session.CanSend() && *outstanding < max_outstanding) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_peer_key_request_tag, job_id, round);
    nodefl_wire_PeerKeyRequest& req = m.body.peer_key_request;
    const size_t capacity = sizeof(req.device_ids) / sizeof(req.device_ids[0]);
    while (*cursor < peers.size() && req.device_ids_count < capacity && *outstanding < max_outstanding) {
      Peer& p = peers[(*cursor)++];
      if (p.key_requested) continue;
      p.key_requested = true;
      ++*outstanding;
      req.device_ids[req.device_ids_count++] = p.id;
    }
    if (req.device_ids_count == 0) break;
    NODEFL_TRY(session.Send(m));
  }
  return Status::Ok();
}

// The connection broke: requests in flight and their answers are lost.
// Unanswered peers (`key_answered` false) are asked again from the start.
template <typename Peer>
void ForgetUnansweredPeerKeyRequests(Span<Peer> peers, size_t* cursor, uint32_t* outstanding) {
  for (Peer& p : peers) {
    if (p.key_requested && !p.key_answered) p.key_requested = false;
  }
  *cursor = 0;
  *outstanding = 0;
}

// The job's peer directory has been received whole: peers it did not list
// cannot be keyed in this job. Each unanswered peer is settled as a key
// failure; returns how many.
template <typename Peer>
uint32_t SettlePeersMissingFromDirectory(Span<Peer> peers) {
  uint32_t missing = 0;
  for (Peer& p : peers) {
    if (p.key_answered) continue;
    p.key_answered = true;
    ++missing;
  }
  return missing;
}

}  // namespace nodefl::roles
