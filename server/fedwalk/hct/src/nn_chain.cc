// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Nearest-neighbour-chain clustering (Murtagh 1983; Muellner 2011, "Modern
// hierarchical, agglomerative clustering algorithms", Sec. 3.3). Follow
// nearest neighbours from an arbitrary cluster until two clusters are each
// other's nearest neighbour, merge them, and continue from the rest of the
// chain. For reducible linkages such a pair is merged in every greedy
// ordering, so the result is the greedy tree, found in O(n^2) instead of
// O(n^3), with no memory beyond the matrix and a few O(n) arrays.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nodefl/server/fedwalk/hct/linkage.h"

namespace nodefl::server::fedwalk {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// A merge in terms of the inputs that represent the two clusters; the
// merged cluster lives on under `y` (the larger index), `x` retires.
struct RawMerge {
  uint32_t x;
  uint32_t y;
  double height;
};

// The condensed triangle plus the list of live clusters. row_start[i] is
// where entry (i, i+1) sits, so (i, j) with i < j is at row_start[i] +
// (j - i - 1): rows are contiguous, columns are a gather through
// row_start. Scans follow the live list in ascending index order, so they
// shrink as clusters retire and never read a retired cluster's stale
// distances.
class Triangle {
 public:
  explicit Triangle(CondensedMatrix& d)
      : n_(d.n()), v_(d.values().data()), row_start_(n_), next_(n_), prev_(n_) {
    size_t start = 0;
    for (uint32_t i = 0; i < n_; ++i) {
      row_start_[i] = start;
      start += n_ - i - 1;
      next_[i] = i + 1;  // n_ ends the list
      prev_[i] = i == 0 ? kNone : i - 1;
    }
  }
  uint32_t n() const { return n_; }
  uint32_t first_live() const { return head_; }
  // (i, j) with i < j.
  float at_ordered(uint32_t i, uint32_t j) const { return v_[row_start_[i] + (j - i - 1)]; }

  // Nearest live neighbour of `a`; `prev` (kNone if none) wins every tie so
  // the chain's distances strictly decrease and it cannot cycle; other ties
  // go to the lowest index.
  uint32_t Nearest(uint32_t a, uint32_t prev) const {
    uint32_t best = prev;
    float best_d = prev == kNone ? std::numeric_limits<float>::infinity()
                                 : at_ordered(std::min(a, prev), std::max(a, prev));
    for (uint32_t x = head_; x < a; x = next_[x]) {
      const float v = v_[row_start_[x] + (a - x - 1)];
      if (v < best_d) {
        best_d = v;
        best = x;
      }
    }
    const size_t row_a = RowBase(a);
    for (uint32_t x = next_[a]; x < n_; x = next_[x]) {
      const float v = v_[row_a + x];
      if (v < best_d) {
        best_d = v;
        best = x;
      }
    }
    return best;
  }

  // Lance-Williams: the distance from every live k to the union of x and y
  // (x < y) from d(k, x) and d(k, y), written to d(k, y); then x retires.
  // Arithmetic in double, storage in float.
  template <typename Rule>
  void MergeInto(uint32_t x, uint32_t y, Rule rule) {
    for (uint32_t k = head_; k < x; k = next_[k]) {
      float& ky = v_[row_start_[k] + (y - k - 1)];
      ky = rule(v_[row_start_[k] + (x - k - 1)], ky);
    }
    const size_t row_x = RowBase(x);
    for (uint32_t k = next_[x]; k < y; k = next_[k]) {
      float& ky = v_[row_start_[k] + (y - k - 1)];
      ky = rule(v_[row_x + k], ky);
    }
    const size_t row_y = RowBase(y);
    for (uint32_t k = next_[y]; k < n_; k = next_[k]) v_[row_y + k] = rule(v_[row_x + k], v_[row_y + k]);
    Retire(x);
  }

 private:
  // v_[RowBase(i) + j] is (i, j) for j > i. Unsigned wrap-around keeps the
  // sum right even when the base itself would be "negative" (row 0).
  size_t RowBase(uint32_t i) const { return row_start_[i] - i - 1; }

  void Retire(uint32_t x) {
    if (prev_[x] == kNone) {
      head_ = next_[x];
    } else {
      next_[prev_[x]] = next_[x];
    }
    if (next_[x] < n_) prev_[next_[x]] = prev_[x];
  }

  uint32_t n_;
  float* v_;
  std::vector<size_t> row_start_;
  std::vector<uint32_t> next_;  // next live index, n_ at the end
  std::vector<uint32_t> prev_;  // previous live index, kNone at the start
  uint32_t head_ = 0;
};

void MergeWithLinkage(Triangle& t, uint32_t x, uint32_t y, double size_x, double size_y, Linkage linkage) {
  switch (linkage) {
    case Linkage::kAverage: {
      const double wx = size_x / (size_x + size_y);
      const double wy = size_y / (size_x + size_y);
      t.MergeInto(x, y, [wx, wy](float kx, float ky) {
        return static_cast<float>(wx * double{kx} + wy * double{ky});
      });
      break;
    }
    case Linkage::kComplete:
      t.MergeInto(x, y, [](float kx, float ky) { return std::max(kx, ky); });
      break;
    case Linkage::kSingle:
      t.MergeInto(x, y, [](float kx, float ky) { return std::min(kx, ky); });
      break;
  }
}

std::vector<RawMerge> RunChain(Triangle& t, Linkage linkage) {
  const uint32_t n = t.n();
  std::vector<uint32_t> size(n, 1);
  std::vector<uint32_t> chain;
  chain.reserve(n);
  std::vector<RawMerge> raw;
  raw.reserve(n - 1);
  while (raw.size() + 1 < n) {
    if (chain.empty()) chain.push_back(t.first_live());
    uint32_t a;
    uint32_t b;
    for (;;) {
      a = chain.back();
      const uint32_t prev = chain.size() >= 2 ? chain[chain.size() - 2] : kNone;
      b = t.Nearest(a, prev);
      if (b == prev) break;
      chain.push_back(b);
    }
    chain.pop_back();
    chain.pop_back();
    const uint32_t x = std::min(a, b);
    const uint32_t y = std::max(a, b);
    raw.push_back({x, y, double{t.at_ordered(x, y)}});
    MergeWithLinkage(t, x, y, size[x], size[y], linkage);
    size[y] += size[x];
    size[x] = 0;
  }
  return raw;
}

uint32_t FindRoot(std::vector<uint32_t>& parent, uint32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];  // path halving
    i = parent[i];
  }
  return i;
}

// The chain emits merges out of height order and names clusters by a
// representative input. Sorting by height (stably, so a merge still follows
// the merges that built its clusters when heights tie) and replaying the
// merges through a union-find gives each cluster its scipy node id.
std::vector<Merge> Relabel(std::vector<RawMerge> raw, uint32_t n) {
  std::stable_sort(raw.begin(), raw.end(),
                   [](const RawMerge& l, const RawMerge& r) { return l.height < r.height; });
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  std::vector<uint32_t> label(parent);
  std::vector<uint32_t> size(n, 1);
  std::vector<Merge> merges;
  merges.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const uint32_t rx = FindRoot(parent, raw[i].x);
    const uint32_t ry = FindRoot(parent, raw[i].y);
    const uint32_t merged_size = size[rx] + size[ry];
    merges.push_back({std::min(label[rx], label[ry]), std::max(label[rx], label[ry]), raw[i].height,
                      merged_size});
    parent[rx] = ry;
    label[ry] = n + static_cast<uint32_t>(i);
    size[ry] = merged_size;
  }
  return merges;
}

}  // namespace

bool AllFinite(const CondensedMatrix& d) {
  for (float v : d.values()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

std::optional<std::vector<Merge>> ClusterNnChain(CondensedMatrix&& d, Linkage linkage) {
  if (!AllFinite(d)) return std::nullopt;
  if (d.n() < 2) return std::vector<Merge>{};
  Triangle t(d);
  return Relabel(RunChain(t, linkage), d.n());
}

}  // namespace nodefl::server::fedwalk
