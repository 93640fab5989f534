// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// GAT layer (Velickovic et al.; Lumos uses 4 heads) on a GraphView. Each
// head k has out/heads columns of Z = H W; node i attends over itself and
// its neighbours j:
//   e_ij = LeakyReLU(a_dst^k . Z_i^k + a_src^k . Z_j^k),
//   alpha_ij = softmax over j of e_ij,
//   out_i^k = sum_j alpha_ij Z_j^k,
// the heads concatenated, plus b. The backward pass is written out by hand
// (softmax and LeakyReLU included) and checked against finite differences
// in tests/sdk/gnn_layers_test.cc.
//
// Shapes: h n x in; w in x out; att_src and att_dst heads x (out/heads);
// b 1 x out. Forward cache kept for the backward pass: z n x out, alpha
// and pre (the logits before LeakyReLU) g.entries_with_self() x heads, in
// row order with each row's self entry first. Scratch: scores n x 2 heads.
// Gradients accumulate into d_w, d_att_src, d_att_dst, d_b; d_h, when
// given, is overwritten. kInvalidArgument for shapes that do not match or
// out not divisible by heads.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/gnn/graph.h"
#include "nodefl/gnn/matrix.h"

namespace nodefl::gnn {

template <typename S>
struct GatParams {
  ConstMatrixMap<S> w;
  ConstMatrixMap<S> att_src;
  ConstMatrixMap<S> att_dst;
  ConstRowMap<S> b;
};

template <typename S>
struct GatGrads {
  MatrixMap<S> w;
  MatrixMap<S> att_src;
  MatrixMap<S> att_dst;
  RowMap<S> b;
};

template <typename S>
struct GatCache {
  MatrixMap<S> z;       // n x out
  MatrixMap<S> alpha;   // entries x heads
  MatrixMap<S> pre;     // entries x heads
  MatrixMap<S> scores;  // n x 2 heads (scratch)
};

template <typename S>
[[nodiscard]] Status GatForward(const GraphView& g, uint32_t heads, S slope, ConstMatrixMap<S> h,
                                const GatParams<S>& p, GatCache<S>& cache, MatrixMap<S> out);

// dz: n x out scratch. Uses cache.scores as scratch too.
template <typename S>
[[nodiscard]] Status GatBackward(const GraphView& g, uint32_t heads, S slope, ConstMatrixMap<S> h,
                                 const GatParams<S>& p, GatCache<S>& cache, ConstMatrixMap<S> d_out,
                                 MatrixMap<S> dz, GatGrads<S>& d, MatrixMap<S>* d_h);

}  // namespace nodefl::gnn
