// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// HctTree: the hierarchical clustering tree of FedWalk Sec. 4.2 over the m
// vertices that took part in the job, and the queries the Eq. 10 score
// needs: |leaves(T[v1 v v2])|, the leaf count of the subtree rooted at the
// least common ancestor of two leaves.
//
// Node ids follow linkage.h: leaves are 0 .. m-1 (leaf i stands for vertex
// leaf_vertex(i)), merge i is node m + i, the root is node 2m - 2. Vertex
// ids that took no part in the job are simply not leaves.
//
// The tree fixes a depth-first leaf order (first child, i.e. the smaller
// node id, first), in which every subtree's leaves are one contiguous range.
// That is what makes all m LCA counts of one leaf an O(m) walk.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nodefl/server/fedwalk/hct/linkage.h"

namespace nodefl::server::fedwalk {

class HctTree {
 public:
  static constexpr uint32_t kNoParent = 0xFFFFFFFFu;

  // The empty tree (no leaves).
  HctTree() = default;

  // A tree over leaf_vertex.size() leaves from scipy-style merges (e.g.
  // ClusterNnChain's output). Heights are rounded to float, as the kTree
  // artefact carries them. std::nullopt unless the input is a valid tree:
  // exactly m - 1 merges, each joining two distinct existing nodes (a < b,
  // both below m + i) that no earlier merge used, finite non-decreasing
  // heights, each merge's size equal to the leaves under it, leaf vertex ids
  // distinct and not kAbsentVertex.
  static std::optional<HctTree> FromMerges(std::span<const Merge> merges, std::vector<uint32_t> leaf_vertex);

  // The kTree artefact of hct_format.h, and its inverse. Parse accepts
  // exactly what FromMerges accepts (sizes are implied by the layout) and
  // exactly TreeArtefactBytes(m) bytes; anything else gives std::nullopt.
  std::vector<uint8_t> Serialize() const;
  static std::optional<HctTree> Parse(std::span<const uint8_t> bytes);

  uint32_t leaf_count() const { return static_cast<uint32_t>(leaf_vertex_.size()); }
  uint32_t node_count() const { return static_cast<uint32_t>(parent_.size()); }
  uint32_t root() const { return node_count() - 1; }  // needs leaf_count() >= 1
  std::span<const uint32_t> leaf_vertices() const { return leaf_vertex_; }
  uint32_t leaf_vertex(uint32_t leaf) const { return leaf_vertex_[leaf]; }
  std::span<const Merge> merges() const { return merges_; }

  uint32_t parent(uint32_t node) const { return parent_[node]; }
  // Leaves in the subtree of `node` (1 for a leaf).
  uint32_t size(uint32_t node) const { return size_[node]; }
  // Leaf indices in depth-first order; the leaves of `node` are
  // dfs_leaves()[dfs_begin(node) .. dfs_begin(node) + size(node)).
  std::span<const uint32_t> dfs_leaves() const { return dfs_leaves_; }
  uint32_t dfs_begin(uint32_t node) const { return dfs_begin_[node]; }

  // out[x] = |leaves(T[leaf v x])| for every leaf x (out[leaf] = 1), in
  // O(m): from the leaf up to the root, every leaf in the other child's
  // range has that ancestor as its LCA. Requires leaf < leaf_count() and
  // out.size() == leaf_count() (aborts otherwise: a caller bug).
  void LcaLeafCountsFrom(uint32_t leaf, std::span<uint32_t> out) const;

  // The same for one pair by walking both paths to the root: O(depth^2),
  // the independent reference for tests.
  uint32_t LcaLeafCount(uint32_t x, uint32_t y) const;

  // The first min(count, m) leaves in order of increasing tree distance
  // from `leaf`: the leaf itself, then the sibling subtree of each ancestor
  // in turn (nearer ancestors first), each in depth-first order.
  std::vector<uint32_t> NearestLeaves(uint32_t leaf, uint32_t count) const;

  bool operator==(const HctTree& other) const {
    return leaf_vertex_ == other.leaf_vertex_ && merges_ == other.merges_;
  }

 private:
  // FromMerges and Parse; Parse's merges carry no size (sizes_given false),
  // so it is computed instead of checked.
  static std::optional<HctTree> Assemble(std::span<const Merge> merges, std::vector<uint32_t> leaf_vertex,
                                         bool sizes_given);

  std::vector<uint32_t> leaf_vertex_;
  std::vector<Merge> merges_;
  std::vector<uint32_t> parent_;      // per node; kNoParent at the root
  std::vector<uint32_t> size_;        // per node
  std::vector<uint32_t> dfs_begin_;   // per node
  std::vector<uint32_t> dfs_leaves_;  // per leaf position
};

}  // namespace nodefl::server::fedwalk
