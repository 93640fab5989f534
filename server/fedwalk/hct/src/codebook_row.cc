// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "codebook_row.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "alias_q31.h"

namespace nodefl::server::fedwalk {

CodebookRowBuilder::CodebookRowBuilder(const CondensedMatrix& dissim, const HctTree& tree, double exponent_scale,
                                       double score_clip)
    : dissim_(dissim),
      tree_(tree),
      exponent_scale_(exponent_scale),
      score_clip_(score_clip),
      row_start_(dissim.n()),
      lca_leaves_(dissim.n()),
      log_weight_(dissim.n()) {
  order_.reserve(dissim.n());
  const uint32_t m = dissim.n();
  size_t start = 0;
  for (uint32_t i = 0; i < m; ++i) {
    row_start_[i] = start;
    start += m - i - 1;
  }
}

void CodebookRowBuilder::ComputeLogWeights(uint32_t leaf) {
  const uint32_t m = dissim_.n();
  tree_.LcaLeafCountsFrom(leaf, lca_leaves_);
  const float* v = dissim_.values().data();
  // (x, leaf) for x < leaf sits in column `leaf` of row x; (leaf, x) for
  // x > leaf is row `leaf`, contiguous. log_weight_ holds |u| first.
  for (uint32_t x = 0; x < leaf; ++x) {
    log_weight_[x] = double{v[row_start_[x] + (leaf - x - 1)]} * lca_leaves_[x];
  }
  log_weight_[leaf] = 0;  // dissim(v, v) = 0
  const float* row = dissim_.row_tail(leaf);
  for (uint32_t x = leaf + 1; x < m; ++x) {
    log_weight_[x] = double{row[x - leaf - 1]} * lca_leaves_[x];
  }
  max_abs_score_ = std::max(max_abs_score_, *std::max_element(log_weight_.begin(), log_weight_.end()));
  // Clipping first, then the exponent: log weight = -scale * min(|u|, B).
  const double scale = -exponent_scale_;
  if (score_clip_ > 0) {
    for (double& w : log_weight_) w = scale * std::min(w, score_clip_);
  } else {
    for (double& w : log_weight_) w *= scale;
  }
}

double CodebookRowBuilder::Build(uint32_t leaf, std::span<nodefl::fedwalk::CodebookEntry> out, double min_probability,
                                 size_t* used) {
  const uint32_t m = dissim_.n();
  size_t k = out.size();
  ComputeLogWeights(leaf);

  const auto vertex = [this](uint32_t x) { return tree_.leaf_vertex(x); };
  const auto more_probable = [&](uint32_t a, uint32_t b) {
    if (log_weight_[a] != log_weight_[b]) return log_weight_[a] > log_weight_[b];
    return vertex(a) < vertex(b);
  };
  // The K-th largest log weight: one pass keeping the K largest seen in a
  // min-heap of plain doubles. Once the heap holds typical values almost
  // every leaf fails the single comparison with its top, so this is far
  // cheaper than selecting indices through the tie-breaking comparator.
  // Everything at or above the cut is a candidate; only the candidates,
  // usually K of them (more only under ties), are sorted with the full
  // order.
  heap_.assign(log_weight_.begin(), log_weight_.begin() + static_cast<std::ptrdiff_t>(k));
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  for (uint32_t x = static_cast<uint32_t>(k); x < m; ++x) {
    if (log_weight_[x] > heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.back() = log_weight_[x];
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
  }
  const double cut = heap_.front();
  order_.clear();
  for (uint32_t x = 0; x < m; ++x) {
    if (log_weight_[x] >= cut) order_.push_back(x);
  }
  std::sort(order_.begin(), order_.end(), more_probable);

  // Log-sum-exp with the maximum (the first kept entry) subtracted: every
  // term is in (0, 1] and the largest is exactly 1, so nothing overflows
  // and the sums carry full relative precision. The dropped mass is summed
  // directly rather than taken as 1 - kept, which would cancel to rounding
  // noise exactly when it is small, i.e. when it matters.
  const double max_log_weight = log_weight_[order_[0]];
  kept_weight_.resize(k);
  double kept = 0;
  for (size_t j = 0; j < k; ++j) {
    kept_weight_[j] = std::exp(log_weight_[order_[j]] - max_log_weight);
    kept += kept_weight_[j];
    out[j].vertex = vertex(order_[j]);
  }
  double dropped = 0;
  for (size_t j = k; j < order_.size(); ++j) dropped += std::exp(log_weight_[order_[j]] - max_log_weight);
  for (uint32_t x = 0; x < m; ++x) {
    if (log_weight_[x] < cut) dropped += std::exp(log_weight_[x] - max_log_weight);
  }

  // Entries below min_probability (relative to the whole row) join the
  // truncated mass: with the paper's raw scores nearly all mass sits on a
  // few vertices, and shipping K - 1 entries of probability 1e-300 to every
  // device would multiply the codebook's size for nothing. The first entry
  // (weight 1) always stays.
  const double total = kept + dropped;
  size_t keep = k;
  while (keep > 1 && kept_weight_[keep - 1] / total < min_probability) {
    --keep;
    kept -= kept_weight_[keep];
    dropped += kept_weight_[keep];
  }
  kept_weight_.resize(keep);
  k = keep;
  *used = keep;
  BuildAliasQ31(kept_weight_, out.first(keep));
  return dropped / (kept + dropped);
}

}  // namespace nodefl::server::fedwalk
