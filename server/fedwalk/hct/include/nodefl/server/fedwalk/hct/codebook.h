// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The random-walk sequence encoder's codebook (seed Sec. 4.3, Eq. 10-12).
// A device replaces vertex v1 in a walk by v2 drawn with
//
//   Pr[v2 | v1]  proportional to  exp(epsilon * u(v1, v2)),
//   u(v1, v2) = -dissim(v1, v2) * |leaves(T[v1 v v2])|,
//
// over all leaves v2 of the HCT, v1 itself included (u(v1, v1) = 0).
// Optionally the score is clipped to [-B, 0] (CodebookOptions::score_clip):
// u_B = max(u, -B). The table of scores is public (it comes from the
// published tree and dissimilarities), so clipping it is post-processing of
// public data and costs nothing; it bounds the score's sensitivity by B
// whatever the run's dissimilarities are, so the raw score's 2·ε·Δu becomes
// 2·ε·B. The paper does not clip (the default). The
// full distribution is m x m; the server ships, per vertex, only the K most
// probable v2 as a Walker/Vose alias table (O(1) draws on a device via
// nodefl::fedwalk::SampleCodebookRow) and reports the probability mass the
// truncation drops, so the caller can choose K to keep it negligible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/common/condensed_matrix.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::fedwalk {

struct CodebookOptions {
  double epsilon = 2.0;      // the walk budget of Eq. 12, finite and > 0
  uint32_t k = 32;           // entries per row, 1 .. kMaxCodebookK
  // Multiplies u before the exponent: 1 is the paper's raw score; a strict
  // mode can pass 1 / (2 * sensitivity) for the textbook mechanism.
  double score_scale = 1.0;  // finite and > 0
  // B: scores below -B are raised to -B (Eq. 10 clipped to [-B, 0]), and the
  // score's sensitivity is then B. 0: no clip (the paper's raw score; the
  // sensitivity is then max_abs_score()). Finite and >= 0.
  double score_clip = 0;
  unsigned threads = 2;      // rows are built on this many threads (0 = 1)
  // Entries less probable than this (relative to their row) are not kept:
  // their mass is reported as truncated. 0 keeps all K. The default drops
  // only entries no sampler would ever draw in practice (1e-12 per draw).
  double min_probability = 1e-12;  // in [0, 1)
};

class Codebook {
 public:
  using Entry = nodefl::fedwalk::CodebookEntry;

  Codebook() = default;

  // One row per vertex id 0 .. vertex_count-1; row v (v = tree.leaf_vertex(i))
  // uses row i of `dissim`, which is indexed by leaf like the tree. Vertices
  // that are no leaf get an empty row. Each row holds at most min(K, m)
  // entries (fewer when the rest fall below min_probability) in order of
  // decreasing probability (ties: smaller vertex id first).
  // std::nullopt if dissim.n() != tree.leaf_count(), a leaf vertex id is
  // not below vertex_count, vertex_count >= kAbsentVertex, a dissimilarity
  // is negative or not finite, or an option is out of range.
  // Time O(m^2 + m K log K) over `threads` threads, memory O(m K).
  static std::optional<Codebook> Build(const CondensedMatrix& dissim, const HctTree& tree,
                                       uint32_t vertex_count, const CodebookOptions& options);

  // The kCodebook artefact of hct_format.h and its inverse. Parse checks the
  // exact length, K in 1 .. kMaxCodebookK, zero reserved fields, count <= K,
  // truncated mass in [0, 1) (0 for an empty row), vertex ids below
  // vertex_count and distinct within a row, accept <= kQ31One and alias <
  // count; std::nullopt otherwise.
  std::vector<uint8_t> Serialize() const;
  static std::optional<Codebook> Parse(std::span<const uint8_t> bytes);

  uint32_t vertex_count() const { return vertex_count_; }
  uint32_t k() const { return k_; }
  // Empty for a vertex with no row or an id >= vertex_count().
  std::span<const Entry> row(uint32_t vertex) const;
  // Probability of Eq. 12 that falls outside the row's K entries (as the
  // artefact stores it, in float). 0 for an empty row.
  double truncated_mass(uint32_t vertex) const;
  double max_truncated_mass() const;
  // The largest |u(v1, v2)| = dissim(v1, v2) x |leaves(T[v1 v v2])| over
  // all pairs: the sensitivity Δu of Eq. 10's score (u(v, v) = 0 and every
  // score is <= 0, so for any fixed output the score ranges over [-max, 0]).
  // With the raw score the encoder is 2·ε·Δu-DP per draw. Measured before
  // any clipping. Not serialised (0 after Parse).
  double max_abs_score() const { return max_abs_score_; }
  // Δu the privacy accounting must use: score_clip when the scores were
  // clipped (even if no score reached -B: B is the bound declared up front),
  // max_abs_score() otherwise. Not serialised (0 after Parse).
  double score_sensitivity() const { return score_clip_ > 0 ? score_clip_ : max_abs_score_; }

  bool operator==(const Codebook& other) const;

 private:
  uint32_t vertex_count_ = 0;
  uint32_t k_ = 0;
  double max_abs_score_ = 0;
  double score_clip_ = 0;
  std::vector<size_t> row_begin_;  // vertex_count + 1 offsets into entries_
  std::vector<Entry> entries_;
  std::vector<float> truncated_mass_;
};

}  // namespace nodefl::server::fedwalk
