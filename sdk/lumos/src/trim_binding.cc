// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/trim_binding.h"

namespace nodefl::lumos {

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
    switch (c.outcome) {
      case compare::PeerOutcome::kLess:  // the neighbour's log-degree is higher: keep it
        p.keep = true;
        p.peer_keeps = false;
        break;
      case compare::PeerOutcome::kGreater:
        p.keep = false;
        p.peer_keeps = true;
        break;
      case compare::PeerOutcome::kEqual:
        // Both kept it after Alg. 1; the lower id lets it go.
        ++greedy_workload;
        p.keep = own_id > p.id;
        p.peer_keeps = !p.keep;
        continue;
      case compare::PeerOutcome::kAborted:
      case compare::PeerOutcome::kNone:
        p.keep = true;
        p.peer_keeps = false;
        break;
    }
    if (p.keep) ++greedy_workload;
  }
  greedy.ForgetJobKeys();
  role.Bind(greedy_workload);
  return Status::Ok();
}

}  // namespace nodefl::lumos
