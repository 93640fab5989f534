// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/trim_binding.h"

namespace nodefl::lumos {

bool ApplyGreedyOutcome(compare::PeerOutcome outcome, uint32_t own_id, TrimPeer& p) {
  p.unsettled = false;
  switch (outcome) {
    case compare::PeerOutcome::kLess:  // the neighbour's log-degree is higher: keep it
      p.keep = true;
      p.peer_keeps = false;
      return true;
    case compare::PeerOutcome::kGreater:
      p.keep = false;
      p.peer_keeps = true;
      return false;
    case compare::PeerOutcome::kEqual:
      // Both kept it after Alg. 1; the lower id lets it go.
      p.keep = own_id > p.id;
      p.peer_keeps = !p.keep;
      return true;
    case compare::PeerOutcome::kAborted:
    case compare::PeerOutcome::kNone:
      break;
  }
  // Nothing was learnt: keep it, assume nothing about the other end.
  p.keep = true;
  p.peer_keeps = false;
  p.unsettled = true;
  return true;
}

Status BindGreedy(compare::SecureCompareRole& greedy, uint32_t own_id, Span<TrimPeer> peers, LumosTrimRole& role) {
  if (!greedy.finished()) return Status::FailedPrecondition();
  const Span<const compare::ComparePeer> from = greedy.peers();
  if (from.size() != peers.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < peers.size(); ++i) {
    if (from[i].id != peers[i].id) return Status::InvalidArgument();
  }
  uint32_t greedy_workload = 0;
  for (size_t i = 0; i < peers.size(); ++i) {
    const compare::ComparePeer& c = from[i];
    TrimPeer& p = peers[i];
    p.keyed = c.key_ready;
    p.keys = c.job_keys;
    p.window = c.window;
    p.next_counter = c.next_counter;
    p.absent = p.awaiting_echo = p.search_due = p.echo_due = false;
    if (ApplyGreedyOutcome(c.outcome, own_id, p)) ++greedy_workload;
  }
  greedy.ForgetJobKeys();
  role.Bind(greedy_workload);
  return Status::Ok();
}

}  // namespace nodefl::lumos
