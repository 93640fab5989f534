// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A synthetic FedWalk world for walk tests: a graph, a random hierarchical
// clustering tree over its vertices, a bin plan, dictionary rows equal to
// the true per-bin neighbour counts, and a codebook, laid out exactly as
// the HCT job leaves them on each device (HctNeighbour records, one
// codebook pool). Codebook rows encode every vertex as itself (through a
// two-entry alias table, so SampleCodebookRow's alias path runs), which
// makes walks readable: entry i is the vertex the walk visited.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "fedwalk_test_artefacts.h"
#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/fedwalk/walk_step.h"

namespace nodefl::fedwalk::testing {

struct WalkWorld {
  uint32_t n = 0;
  uint8_t bins = 0;
  std::vector<std::set<uint32_t>> adjacency;
  std::vector<uint8_t> plan;
  std::vector<uint8_t> tree;
  std::vector<CodebookEntry> codebook;  // row of x at 2x, 2 entries
  std::vector<std::vector<HctNeighbour>> neighbours;
  std::vector<uint32_t> tree_parent, tree_leaf_of;
  TreeIndex index;
  std::vector<uint32_t> bin_sizes;

  // Each vertex joins its ring neighbours at distance 1 and 2, plus
  // `chords` random extra edges: degrees 4 and up, connected.
  static WalkWorld Make(uint32_t n, uint8_t bins, uint32_t chords, uint64_t seed) {
    WalkWorld w;
    w.n = n;
    w.bins = bins;
    std::mt19937_64 gen(seed);
    w.adjacency.resize(n);
    auto link = [&w](uint32_t a, uint32_t b) {
      if (a == b) return;
      w.adjacency[a].insert(b);
      w.adjacency[b].insert(a);
    };
    for (uint32_t v = 0; v < n; ++v) {
      link(v, (v + 1) % n);
      link(v, (v + 2) % n);
    }
    for (uint32_t c = 0; c < chords; ++c) link(static_cast<uint32_t>(gen() % n), static_cast<uint32_t>(gen() % n));
    w.plan.resize(n);
    for (uint32_t v = 0; v < n; ++v) w.plan[v] = static_cast<uint8_t>(gen() % bins);
    // A random tree: merge two random roots until one is left.
    std::vector<uint32_t> leaves(n);
    for (uint32_t v = 0; v < n; ++v) leaves[v] = v;
    std::shuffle(leaves.begin(), leaves.end(), gen);
    std::vector<uint32_t> active(n);
    for (uint32_t i = 0; i < n; ++i) active[i] = i;
    std::vector<TestMerge> merges;
    for (uint32_t j = 0; j + 1 < n; ++j) {
      const size_t a = gen() % active.size();
      size_t b = gen() % (active.size() - 1);
      if (b >= a) ++b;
      merges.push_back({active[a], active[b], static_cast<float>(j)});
      active.erase(active.begin() + static_cast<long>(std::max(a, b)));
      active.erase(active.begin() + static_cast<long>(std::min(a, b)));
      active.push_back(n + j);
    }
    w.tree = EncodeTree(leaves, merges);
    w.Finish();
    return w;
  }

  // A given graph, plan and tree (leaves and merges as in kTree).
  static WalkWorld FromGraph(uint32_t n, uint8_t bins, const std::vector<std::pair<uint32_t, uint32_t>>& edges,
                             std::vector<uint8_t> plan, const std::vector<uint32_t>& leaves,
                             const std::vector<TestMerge>& merges) {
    WalkWorld w;
    w.n = n;
    w.bins = bins;
    w.adjacency.resize(n);
    for (const auto& e : edges) {
      w.adjacency[e.first].insert(e.second);
      w.adjacency[e.second].insert(e.first);
    }
    w.plan = std::move(plan);
    w.tree = EncodeTree(leaves, merges);
    w.Finish();
    return w;
  }

  void Finish() {
    WalkWorld& w = *this;
    w.codebook.resize(2 * size_t{n});
    for (uint32_t v = 0; v < n; ++v) {
      w.codebook[2 * v] = CodebookEntry{v, kQ31One / 2, 1};
      w.codebook[2 * v + 1] = CodebookEntry{v, kQ31One, 0};
    }
    w.neighbours.resize(n);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint32_t u : w.adjacency[v]) w.neighbours[v].push_back(w.Record(u));
    }
    w.tree_parent.resize(TreeIndex::NodeCount(n));
    w.tree_leaf_of.resize(n);
    EXPECT_TRUE(w.index.Build(w.tree, n, w.tree_parent, w.tree_leaf_of).ok());
    w.bin_sizes.resize(bins);
    CountLeavesPerBin(w.index, w.plan, w.bin_sizes);
  }

  // The HCT job's record of neighbour u: its bin, its dictionary row (its
  // true per-bin neighbour counts) and its codebook row.
  // Vertices outside the plan (kAbsentBin) are not part of the world: no
  // tree leaf, no codebook row is needed for them by the tests.
  HctNeighbour Record(uint32_t u) const {
    HctNeighbour r;
    r.id = u;
    r.bin = plan[u];
    r.in_dictionary = true;
    r.has_codebook_row = true;
    r.codebook_offset = 2 * u;
    r.codebook_count = 2;
    std::vector<float> counts(bins, 0.0f);
    for (uint32_t x : adjacency[u]) {
      if (plan[x] < bins) counts[plan[x]] += 1.0f;
    }
    std::vector<uint8_t> bytes;
    for (float c : counts) PutF32(bytes, c);
    std::copy(bytes.begin(), bytes.end(), r.row_bytes);
    r.estimated_degree = static_cast<double>(adjacency[u].size());
    return r;
  }

  Span<const CodebookEntry> Row(uint32_t v) const {
    return Span<const CodebookEntry>(codebook).subspan(2 * size_t{v}, 2);
  }

  WalkStepContext Context(uint32_t v, double p) const {
    WalkStepContext c;
    c.own_id = v;
    c.neighbours = neighbours[v];
    c.codebook_pool = codebook;
    c.walk_neighbours = CountWalkNeighbours(neighbours[v]);
    c.own_row = Row(v);
    c.tree = &index;
    c.bin_plan = plan;
    c.bin_sizes = bin_sizes;
    c.p = p;
    return c;
  }

  // The pool device `v` builds for its neighbour u (the reference for
  // "u' came from the pool").
  std::vector<uint32_t> PoolOf(uint32_t v, uint32_t u, size_t capacity) const {
    const HctNeighbour r = Record(u);
    std::vector<uint32_t> quotas(bins);
    PoolQuotas(ConstByteSpan(r.row_bytes, 4 * size_t{bins}), bin_sizes, quotas);
    std::vector<uint32_t> pool(capacity);
    pool.resize(NearestInBins(index, plan, u, v, quotas, pool));
    return pool;
  }
};

// Theorem 4.2's recurrence (Eq. 19) for the mean and second moment of the
// number of device-to-device messages of a walk of length l:
//   M_1 = 0, M_2 = 1, M_l = 1 + (B ? M_{l-2} : M_{l-1}), B ~ Bernoulli(p).
struct MessageMoments {
  double mean = 0;
  double variance = 0;
};
inline MessageMoments Moments(uint32_t l, double p) {
  std::vector<double> e(l + 1, 0.0), s(l + 1, 0.0);
  if (l >= 2) {
    e[2] = 1;
    s[2] = 1;
  }
  for (uint32_t r = 3; r <= l; ++r) {
    e[r] = p * (e[r - 2] + 1) + (1 - p) * (e[r - 1] + 1);
    s[r] = p * (1 + 2 * e[r - 2] + s[r - 2]) + (1 - p) * (1 + 2 * e[r - 1] + s[r - 1]);
  }
  return MessageMoments{e[l], s[l] - e[l] * e[l]};
}

// Eq. 21 as the paper prints it. It solves the difference equation (Eq.
// 20) but not its start: it gives E_2 = 0 and E_3 = 2 - 2p where Eq. 19
// gives 1 and 2 - p, and stays p / (1 + p) + O(p^l) below the recurrence
// (32.306 instead of 32.639 at l = 40, p = 0.2).
inline double Equation21AsPrinted(uint32_t l, double p) {
  const double x = static_cast<double>(l);
  return (x - 2) / (1 + p) + (2 - 2 * p - 1 / (1 + p)) * (1 - std::pow(-p, x - 2)) / (1 + p);
}

// The closed form of Eq. 19 with E_1 = 0, E_2 = 1: the differences
// D_l = E_l - E_{l-1} obey D_l = 1 - p D_{l-1} from D_2 = 1, so
// D_l = (1 - (-p)^(l-1)) / (1 + p) and
// E_l = (l - 1) / (1 + p) + p (1 - (-p)^(l-1)) / (1 + p)^2.
inline double Equation21Corrected(uint32_t l, double p) {
  const double x = static_cast<double>(l);
  return (x - 1) / (1 + p) + p * (1 - std::pow(-p, x - 1)) / ((1 + p) * (1 + p));
}

}  // namespace nodefl::fedwalk::testing
