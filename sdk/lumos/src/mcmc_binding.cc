// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/mcmc_binding.h"

namespace nodefl::lumos {

bool GreedyKeeps(compare::PeerOutcome outcome) {
  // kGreater: this device's log-degree is higher, the neighbour keeps it.
  // Anything else keeps it here (kLess, the tie, an abort: nothing learnt).
  return outcome != compare::PeerOutcome::kGreater;
}

Status BindMcmcGreedy(compare::SecureCompareRole& greedy, Span<McmcPeer> peers, LumosMcmcRole& role) {
  if (!greedy.finished()) return Status::FailedPrecondition();
  const Span<const compare::ComparePeer> from = greedy.peers();
  if (from.size() != peers.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < peers.size(); ++i) {
    if (from[i].id != peers[i].id) return Status::InvalidArgument();
  }
  uint32_t greedy_workload = 0;
  for (size_t i = 0; i < peers.size(); ++i) {
    peers[i].keep = GreedyKeeps(from[i].outcome);
    greedy_workload += peers[i].keep ? 1u : 0u;
  }
  greedy.ForgetJobKeys();
  role.Bind(greedy_workload);
  return Status::Ok();
}

}  // namespace nodefl::lumos
