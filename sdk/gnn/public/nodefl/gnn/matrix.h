// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Matrices over caller memory. Every matrix in nodefl_gnn is an Eigen::Map
// on a span the caller owns (an arena slice on a device); row-major, so a
// node's embedding is one contiguous row. The three products the layers
// need are written out below, row by row into their destination, which
// never allocates (Eigen's blocked GEMM reaches for heap workspace on large
// operands) and skips the zero entries of the left operand: features are
// sparse (binary bag-of-words) and a tree's virtual nodes start at zero, so
// the first layer costs the non-zeros, not nodes x features.
#pragma once

#include <Eigen/Core>
#include <cstddef>

#include "nodefl/core/span.h"

namespace nodefl::gnn {

template <typename S>
using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename S>
using Row = Eigen::Matrix<S, 1, Eigen::Dynamic>;

template <typename S>
using MatrixMap = Eigen::Map<Matrix<S>>;
template <typename S>
using ConstMatrixMap = Eigen::Map<const Matrix<S>>;
template <typename S>
using RowMap = Eigen::Map<Row<S>>;
template <typename S>
using ConstRowMap = Eigen::Map<const Row<S>>;

// rows x cols over the first rows * cols elements of `data` (the caller
// checks the size; Fits says whether it is enough).
template <typename S>
inline MatrixMap<S> View(Span<S> data, size_t rows, size_t cols) {
  return MatrixMap<S>(data.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
template <typename S>
inline ConstMatrixMap<S> View(Span<const S> data, size_t rows, size_t cols) {
  return ConstMatrixMap<S>(data.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
template <typename S>
inline bool Fits(Span<const S> data, size_t rows, size_t cols) {
  return data.size() >= rows * cols;
}

// out = a b, or out += a b with `accumulate` (a: m x k, b: k x n).
template <typename A, typename B, typename O>
void MultiplyRows(const A& a, const B& b, O& out, bool accumulate) {
  using S = typename O::Scalar;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    if (!accumulate) out.row(i).setZero();
    for (Eigen::Index k = 0; k < a.cols(); ++k) {
      const S v = a(i, k);
      if (v != S(0)) out.row(i) += v * b.row(k);
    }
  }
}

// out += a^T b (a: m x k, b: m x n, out: k x n).
template <typename A, typename B, typename O>
void AddTransposedProduct(const A& a, const B& b, O& out) {
  using S = typename O::Scalar;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index k = 0; k < a.cols(); ++k) {
      const S v = a(i, k);
      if (v != S(0)) out.row(k) += v * b.row(i);
    }
  }
}

// out = a b^T (a: m x n, b: k x n, out: m x k): dots of contiguous rows.
template <typename A, typename B, typename O>
void MultiplyTransposedRight(const A& a, const B& b, O& out) {
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index k = 0; k < b.rows(); ++k) out(i, k) = a.row(i).dot(b.row(k));
  }
}

}  // namespace nodefl::gnn
