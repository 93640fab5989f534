// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Inputs and independent checks shared by the HCT tests: random matrices
// and trees from a seeded DRBG, and properties of a merge list computed
// from the merges alone (no HctTree, no clustering code).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/random/drbg.h"
#include "nodefl/server/fedwalk/common/condensed_matrix.h"
#include "nodefl/server/fedwalk/hct/linkage.h"

namespace nodefl::server::fedwalk::test {

// A deterministic DRBG for (seed, stream); aborts the test binary if
// seeding fails (it cannot for deterministic seeding).
void Seed(Drbg& rng, uint64_t seed, uint64_t stream = 0);

// n x n distances: uniform in [0, scale) if levels == 0, otherwise integers
// 0 .. levels-1 (so many distances tie).
CondensedMatrix RandomMatrix(Drbg& rng, uint32_t n, uint32_t levels = 0, double scale = 1.0);

// A random valid merge list over m leaves: two random live clusters at a
// time, heights increasing by random steps (ties when `tied_heights`).
std::vector<Merge> RandomMerges(Drbg& rng, uint32_t m, bool tied_heights = false);

// m distinct vertex ids drawn from 0 .. vertex_count-1 in random order.
std::vector<uint32_t> RandomLeafVertices(Drbg& rng, uint32_t m, uint32_t vertex_count);

// "" if `merges` is a valid scipy-style linkage over n inputs (a < b, ids
// exist, each node used once, sizes right, heights non-decreasing);
// otherwise a description of the first problem.
std::string CheckScipyLinkage(const std::vector<Merge>& merges, uint32_t n);

// Cluster of every input after the first `count` merges, named by its
// smallest input: equal vectors mean equal partitions.
std::vector<uint32_t> PartitionAfter(const std::vector<Merge>& merges, uint32_t n, size_t count);

// Inputs under every node (leaves 0..n-1, then one per merge), sorted.
std::vector<std::vector<uint32_t>> NodeMembers(const std::vector<Merge>& merges, uint32_t n);

// Linkage distance between two sets of inputs, from its definition.
double DefinitionDistance(const CondensedMatrix& d, const std::vector<uint32_t>& p,
                          const std::vector<uint32_t>& q, Linkage linkage);

// "" if replaying `merges` in order is a run of the greedy algorithm: each
// merge joins a pair of live clusters at the smallest current distance
// (within `tolerance` relative) and its height is that distance. Otherwise
// a description of the first violation.
std::string CheckGreedyReplay(const CondensedMatrix& d, const std::vector<Merge>& merges, Linkage linkage,
                              double tolerance);

}  // namespace nodefl::server::fedwalk::test
