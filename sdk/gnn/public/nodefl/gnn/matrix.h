// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Matrices over caller memory. Every matrix in nodefl_gnn is an Eigen::Map
// on a span the caller owns (an arena slice on a device); row-major, so a
// node's embedding is one contiguous row. Products are evaluated
// coefficient by coefficient straight into their destination
// (lazyProduct + noalias), which never allocates: Eigen's blocked GEMM
// would reach for heap workspace on large operands, and these operands are
// small (a tree of a few hundred nodes, 16 columns).
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

}  // namespace nodefl::gnn
