// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// How many secure sums (summed scalars, the paper's unit) each kCAGC run
// takes: our exact count, which the runs check against the aggregator's
// counter, and the paper's figures (kCAGC Sec. 3.3-3.4).
//
// One collaborative k-means stage (Protocol 2 from line 8, on N points,
// basic kCAGC's nodes or kCAGC's virtual nodes, and c centres) takes
//   N c   for the 1/9 step's distances (paper seeding: one round of N c;
//         joint seeding: c rounds of N, the distances to each seed as it
//         is chosen, which together are the 1/9 step's distances)
//   N c   per Lloyd iteration actually run (t <= Q; the run stops early
//         when an assignment repeats)
// so (1 + t) N c (times the restarts, if the server runs several and keeps
// the least inertia), and a run adds 1 for the range round (range.h). With
// t = Q this is the paper's (Q + 1) n k for basic kCAGC; kCAGC's N is the
// number of non-empty intersections (at most min(n, k̂^L)); the tree's
// internal nodes each have at most k̂^2 virtual nodes and k̂ centres (the
// root k).
//
// The joint mode (not the paper's protocol; docs/kcagc.md, "The joint
// spectral space") takes the range round and one aggregation of n b
// scalars per step of the subspace iteration: 1 + steps n b. Its
// clustering runs at the server in the clear, so it adds no sums. The paper
// has no such mode, hence no paper count for it.
#pragma once

#include <cstdint>

namespace nodefl::server::kcagc {

inline constexpr uint64_t kRangeRoundSums = 1;

// (restarts + lloyd_iterations) * points * centres, lloyd_iterations
// summed over the restarts (each restart seeds and runs Lloyd anew).
uint64_t StageSecureSums(uint64_t points, uint32_t centres, uint32_t lloyd_iterations, uint32_t restarts = 1);

// Rounds (vector aggregations) of one stage: per restart, joint seeding
// c + t, paper seeding 1 + t.
uint64_t StageRounds(uint32_t centres, uint32_t lloyd_iterations, bool joint_seeding, uint32_t restarts = 1);

// The joint mode: 1 + steps * n * block, and 1 + steps rounds.
uint64_t JointSecureSums(uint64_t n, uint32_t block, uint32_t steps);
uint64_t JointRounds(uint32_t steps);

// The paper's counts (Sec. 3.4), in double: k̂^L overflows 64 bits quickly.
double PaperBasicSecureSums(uint64_t n, uint32_t k, uint32_t q);                   // (Q+1) n k
double PaperKcagcSecureSums(uint32_t k, uint32_t k_hat, uint32_t l, uint32_t q);   // (Q+1) k k̂^L
double PaperTreeSecureSums(uint32_t k_hat, uint32_t l, uint32_t q);                // (Q+1) L k̂^3

// Our count's worst case for the tree (every Lloyd stage runs Q
// iterations, every pair of clusters meets): 1 + (Q+1) [(L-2) v k̂ + v k]
// with v = min(n, k̂^2) virtual nodes per internal node.
double TreeSecureSumBound(uint64_t n, uint32_t k, uint32_t k_hat, uint32_t l, uint32_t q);

}  // namespace nodefl::server::kcagc
