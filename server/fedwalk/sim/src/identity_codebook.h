// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The exact-encoder ablation as an artefact: a kCodebook whose row v holds
// v alone with probability 1 (Enc(v) = v), for every vertex in the tree
// and no row for the others. The devices receive it through the same
// CodebookStream as Eq. 12's codebook, and RunWalkStep draws from it the
// same way, so the only thing that changes is the encoder.
#pragma once

#include <cstdint>
#include <vector>

namespace nodefl::server::fedwalk::walk_sim {

// `in_tree[v]`: v is a leaf of the published tree.
std::vector<uint8_t> IdentityCodebookArtefact(const std::vector<bool>& in_tree);

}  // namespace nodefl::server::fedwalk::walk_sim
