// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TreeIndex: what FedWalk's 2-hop predictor (walk_format.h, step 4; seed
// Sec. 4.3) needs from the published hierarchical clustering tree, built
// in caller memory from the kTree bytes the HCT job kept (hct_format.h):
// the parent of every node and the leaf of every vertex id. Children and
// leaf vertex ids are read from the kTree bytes themselves (they are
// already an array of merges), so the bytes must outlive the index.
//
// Nodes are numbered as in kTree: ids < m are leaves (leaf i is vertex
// leaves[i]), m + j is merge j, and the last merge (2m - 2) is the root.
//
// Build re-checks everything it relies on (TreeStream checked the layout
// as it streamed, but not that each node is merged at most once): size,
// leaf ids < vertex_count and distinct, every merge joining two existing
// nodes that have no parent yet. A tree that passes is a single binary
// tree over its m leaves.
//
// Memory: parent: NodeCount(m) = 2m - 1 words; leaf_of_vertex:
// vertex_count words. About 12 bytes per vertex when every vertex is a
// leaf, besides the 16 bytes per leaf of the kTree bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::fedwalk {

class TreeIndex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  static constexpr size_t NodeCount(uint32_t leaves) { return leaves == 0 ? 0 : 2 * size_t{leaves} - 1; }
  // The leaf count m of a kTree artefact (its first word), so the caller
  // can size `parent`. kInvalidArgument for fewer than 4 bytes.
  static Result<uint32_t> LeafCount(ConstByteSpan tree);

  // Indexes `tree`. `parent` needs NodeCount(m) entries and
  // `leaf_of_vertex` vertex_count entries (kResourceExhausted otherwise);
  // kDataLoss for a tree that fails the checks above. On failure the index
  // is empty (no leaves).
  Status Build(ConstByteSpan tree, uint32_t vertex_count, Span<uint32_t> parent,
               Span<uint32_t> leaf_of_vertex);

  uint32_t leaves() const { return leaves_; }
  bool empty() const { return leaves_ == 0; }
  uint32_t root() const { return leaves_ == 0 ? kNone : static_cast<uint32_t>(NodeCount(leaves_) - 1); }
  bool IsLeaf(uint32_t node) const { return node < leaves_; }
  // kNone for the root.
  uint32_t Parent(uint32_t node) const { return parent_[node]; }
  // Children of an internal node (IsLeaf false), in merge order (a, b).
  uint32_t FirstChild(uint32_t node) const;
  uint32_t SecondChild(uint32_t node) const;
  // The vertex id of a leaf.
  uint32_t LeafVertex(uint32_t leaf) const;
  // The leaf of a vertex, kNone if the vertex is not in the tree (or its id
  // is >= vertex_count).
  uint32_t LeafOf(uint32_t vertex) const;

 private:
  ConstByteSpan tree_;
  Span<uint32_t> parent_;
  Span<uint32_t> leaf_of_vertex_;
  uint32_t leaves_ = 0;
};

// The pool of the 2-hop predictor for vertex u. quotas[i] (one per bin,
// bins = quotas.size()) is how many vertices of bin i the pool wants (the
// predictor's round(max(c_u[i], 0)), see PoolQuotas). Walking up from u's
// leaf, each ancestor's other subtree is enumerated depth first (first
// child before second; no stack: the parent links lead back), so leaves
// come nearest first (the deeper their lowest common ancestor with u, the
// nearer), ties in depth-first order. A leaf whose bin (bin_plan[vertex])
// still has quota left joins the pool. u itself and `exclude` (the device
// running the step: a jump to itself would be no jump; TreeIndex::kNone
// for none) never do, nor do leaves whose bin is >= bins or kAbsentBin.
// Stops when every quota is met, the root has been passed, or `pool` is
// full: a pool smaller than the quotas' sum keeps the nearest vertices
// overall (size it for the largest degree estimate the device holds; at
// most the leaf count is ever needed). Returns the pool size; 0 when u is
// not in the tree. Costs O(leaves visited), at most O(m).
size_t NearestInBins(const TreeIndex& tree, ConstByteSpan bin_plan, uint32_t u, uint32_t exclude,
                     Span<const uint32_t> quotas, Span<uint32_t> pool);

// Leaves of the tree in each bin (bin_sizes.size() bins; leaves whose bin
// is out of range or whose vertex is beyond the plan are not counted).
void CountLeavesPerBin(const TreeIndex& tree, ConstByteSpan bin_plan, Span<uint32_t> bin_sizes);

// The predictor's quotas from a dictionary row c_u (bins x f32 LE, as
// HctNeighbour::row_bytes holds it): quotas[i] = round(max(c_u[i], 0)),
// at most bin_sizes[i] (NaN counts as 0). bins = quotas.size() =
// bin_sizes.size(); row_bytes holds at least 4 x bins bytes.
void PoolQuotas(ConstByteSpan row_bytes, Span<const uint32_t> bin_sizes, Span<uint32_t> quotas);

}  // namespace nodefl::fedwalk
