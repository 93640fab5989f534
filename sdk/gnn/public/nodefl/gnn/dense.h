// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Row-wise building blocks: a linear layer (Lumos Eq. 32's classifier),
// ReLU and (inverted) dropout, each with its backward pass. All over caller
// memory; kInvalidArgument for shapes that do not match.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/gnn/matrix.h"

namespace nodefl::gnn {

// out = x w + b (x: m x in, w: in x out, b: 1 x out).
template <typename S>
[[nodiscard]] Status LinearForward(ConstMatrixMap<S> x, ConstMatrixMap<S> w, ConstRowMap<S> b, MatrixMap<S> out);
// d_w += x^T d_out, d_b += column sums of d_out, d_x = d_out w^T (when given).
template <typename S>
[[nodiscard]] Status LinearBackward(ConstMatrixMap<S> x, ConstMatrixMap<S> w, ConstMatrixMap<S> d_out,
                                    MatrixMap<S> d_w, RowMap<S> d_b, MatrixMap<S>* d_x);

// In place: x = max(x, 0).
template <typename S>
void Relu(MatrixMap<S> x);
// In place: d = d where y > 0, else 0 (y: the ReLU's output).
template <typename S>
[[nodiscard]] Status ReluBackward(ConstMatrixMap<S> y, MatrixMap<S> d);

// Fills `mask` with 0 (dropped, probability `rate`) or 1 / (1 - rate)
// (kept), from `random`: 24 random bits per element against the rate, so
// the rate is honoured to 2^-24. rate 0 keeps everything (mask all 1) and
// draws nothing. kInvalidArgument for a rate outside [0, 1); the random
// function's failure as kInternal.
template <typename S>
[[nodiscard]] Status DropoutMask(S rate, MatrixMap<S> mask, crypto::RandomFunction random, void* random_context);
// x *= mask, element-wise (forward and backward alike).
template <typename S>
[[nodiscard]] Status ApplyMask(ConstMatrixMap<S> mask, MatrixMap<S> x);

}  // namespace nodefl::gnn
