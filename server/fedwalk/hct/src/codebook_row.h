// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One row of the Eq. 12 codebook: scores against every leaf, the top K,
// the mass outside them, and the alias table over them. Each worker thread
// owns one builder (its scratch is O(m)); the inputs are shared read-only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/common/condensed_matrix.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::fedwalk {

class CodebookRowBuilder {
 public:
  // exponent_scale = epsilon * score_scale: log Pr[v2|v1] = exponent_scale *
  // max(u(v1, v2), -score_clip) + const (score_clip 0: no clip). dissim must
  // be finite and non-negative (Build checks).
  CodebookRowBuilder(const CondensedMatrix& dissim, const HctTree& tree, double exponent_scale,
                     double score_clip);

  // Writes the row of leaf `leaf` into `out` (room for min(K, m) entries,
  // most probable first, ties by smaller vertex id; entries whose
  // probability is below `min_probability` are left out too, keeping at
  // least one), sets *used to the entries written, and returns the exact
  // probability mass of the leaves left out.
  double Build(uint32_t leaf, std::span<nodefl::fedwalk::CodebookEntry> out, double min_probability, size_t* used);
  // Largest |u(v1, v2)| = dissim x |leaves(LCA)| over the rows built so far,
  // before clipping (see Codebook::max_abs_score).
  double max_abs_score() const { return max_abs_score_; }

 private:
  void ComputeLogWeights(uint32_t leaf);

  const CondensedMatrix& dissim_;
  const HctTree& tree_;
  double exponent_scale_;
  double score_clip_;  // 0: none
  double max_abs_score_ = 0;
  std::vector<size_t> row_start_;     // condensed offset of (i, i+1)
  std::vector<uint32_t> lca_leaves_;  // |leaves(T[leaf v x])| per leaf x
  std::vector<double> log_weight_;    // per leaf x
  std::vector<double> heap_;          // the K largest log weights
  std::vector<uint32_t> order_;       // candidate leaves, most probable first
  std::vector<double> kept_weight_;   // per kept entry
};

}  // namespace nodefl::server::fedwalk
