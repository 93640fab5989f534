// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// GCN layer (Kipf and Welling; Lumos Eq. 2 with GCN's aggregation) on a
// GraphView: out = Â (H W) + b, Â = D^-1/2 (A + I) D^-1/2, where D counts
// each node's neighbours plus itself. Â is symmetric, so the backward pass
// propagates the output gradient with the same Â.
//
// Shapes: h n x in, w in x out, b 1 x out, z and out n x out (z: the
// forward's H W, kept for nothing but reused as scratch by the caller),
// dz n x out scratch. Gradients accumulate (+=) into d_w and d_b; d_h, when
// given, is overwritten. kInvalidArgument for a shape that does not match.
#pragma once

#include "nodefl/core/status.h"
#include "nodefl/gnn/graph.h"
#include "nodefl/gnn/matrix.h"

namespace nodefl::gnn {

template <typename S>
[[nodiscard]] Status GcnForward(const GraphView& g, ConstMatrixMap<S> h, ConstMatrixMap<S> w, ConstRowMap<S> b,
                                MatrixMap<S> z, MatrixMap<S> out);

template <typename S>
[[nodiscard]] Status GcnBackward(const GraphView& g, ConstMatrixMap<S> h, ConstMatrixMap<S> w,
                                 ConstMatrixMap<S> d_out, MatrixMap<S> dz, MatrixMap<S> d_w, RowMap<S> d_b,
                                 MatrixMap<S>* d_h);

// out = Â in (any width); in and out must not overlap.
template <typename S>
void GcnPropagate(const GraphView& g, ConstMatrixMap<S> in, MatrixMap<S> out);

}  // namespace nodefl::gnn
