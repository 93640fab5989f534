// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The graph filter of kCAGC Sec. 3.2 (Protocol 1 lines 1-3): X̄ = G X with
// G = p(L_s), L_s = I - D^-1/2 Â D^-1/2 the symmetric normalized Laplacian.
// Two responses, both from the paper:
//   kHalf  p(λ) = (1 - λ/2)^ψ        AGC's filter (the default)
//   kNorm  p(λ) = (1 - λ/‖L_s‖)^ψ    the second filter (kCAGC Appendix E.2)
// Both are a polynomial of degree ψ in L_s, so G X is ψ products with the
// sparse L_s (never an n x n matrix, never an eigendecomposition): exactly
// the paper's Q p(Λ) Q^T X, in O(ψ (n + |E|) m) time.
//
// Self loops: Â = A + I by default, as AGC does (its code normalises A + I
// before forming (I + Â_norm)/2). It keeps every degree positive (an
// isolated node is otherwise undefined in D^-1/2) and a node's own features
// in its filtered row at full weight. Without self loops, an isolated
// node's row of D^-1/2 A D^-1/2 is zero (L_s's row is the identity's).
//
// Every participant holds the same graph, so every participant computes the
// same G; the filter acts on columns independently, so filtering slices and
// concatenating them is filtering the whole matrix (bit for bit: each column
// sees the same operations in the same order).
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/status.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

enum class FilterKind : uint8_t {
  kHalf,  // (1 - λ/2)^ψ
  kNorm,  // (1 - λ/‖L_s‖)^ψ
};

struct FilterOptions {
  FilterKind kind = FilterKind::kHalf;
  uint32_t order = 12;  // ψ; docs/kcagc.md says how the default was chosen
  bool self_loops = true;
  // kNorm only: ‖L_s‖ (its largest eigenvalue); 0 computes it
  // (LaplacianNorm). Every participant computes the same value from the
  // same graph; passing it avoids recomputing it per slice.
  double laplacian_norm = 0.0;
};

// kInvalidArgument unless offsets has num_nodes + 1 non-decreasing entries
// from 0 to neighbours.size() and every neighbour is a node other than v.
[[nodiscard]] Status ValidateGraph(const GraphView& graph);

// ‖L_s‖ = λ_max(L_s) in [0, 2], by power iteration from a fixed start
// (deterministic, so every participant gets the same number). A slight
// underestimate only makes p(λ_max) = (1 - λ_max/‖L_s‖)^ψ a tiny negative
// number instead of 0.
[[nodiscard]] Result<double> LaplacianNorm(const GraphView& graph, bool self_loops);

// *x (n x m) <- G *x. kInvalidArgument for a bad graph, a row count other
// than num_nodes, ψ = 0 is allowed (G = I).
[[nodiscard]] Status ApplyGraphFilter(const GraphView& graph, const FilterOptions& options, Matrix* x);

}  // namespace nodefl::kcagc
