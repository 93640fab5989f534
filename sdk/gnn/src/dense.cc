// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/dense.h"

namespace nodefl::gnn {

template <typename S>
Status LinearForward(ConstMatrixMap<S> x, ConstMatrixMap<S> w, ConstRowMap<S> b, MatrixMap<S> out) {
  if (w.rows() != x.cols() || b.cols() != w.cols() || out.rows() != x.rows() || out.cols() != w.cols()) {
    return Status::InvalidArgument();
  }
  MultiplyRows(x, w, out, false);
  out.rowwise() += b;
  return Status::Ok();
}

template <typename S>
Status LinearBackward(ConstMatrixMap<S> x, ConstMatrixMap<S> w, ConstMatrixMap<S> d_out, MatrixMap<S> d_w,
                      RowMap<S> d_b, MatrixMap<S>* d_x) {
  if (w.rows() != x.cols() || d_out.rows() != x.rows() || d_out.cols() != w.cols() || d_w.rows() != w.rows() ||
      d_w.cols() != w.cols() || d_b.cols() != w.cols() ||
      (d_x != nullptr && (d_x->rows() != x.rows() || d_x->cols() != x.cols()))) {
    return Status::InvalidArgument();
  }
  d_b += d_out.colwise().sum();
  AddTransposedProduct(x, d_out, d_w);
  if (d_x != nullptr) MultiplyTransposedRight(d_out, w, *d_x);
  return Status::Ok();
}

template <typename S>
void Relu(MatrixMap<S> x) {
  x = x.cwiseMax(S(0));
}

template <typename S>
Status ReluBackward(ConstMatrixMap<S> y, MatrixMap<S> d) {
  if (y.rows() != d.rows() || y.cols() != d.cols()) return Status::InvalidArgument();
  for (Eigen::Index i = 0; i < d.rows(); ++i) {
    for (Eigen::Index j = 0; j < d.cols(); ++j) {
      if (!(y(i, j) > 0)) d(i, j) = 0;
    }
  }
  return Status::Ok();
}

template <typename S>
Status DropoutMask(S rate, MatrixMap<S> mask, crypto::RandomFunction random, void* random_context) {
  if (!(rate >= 0 && rate < 1)) return Status::InvalidArgument();
  if (rate == 0) {
    mask.setOnes();
    return Status::Ok();
  }
  if (random == nullptr) return Status::InvalidArgument();
  const S keep = S(1) / (S(1) - rate);
  // An element is dropped when its 24-bit draw is below rate * 2^24.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(rate) * 16777216.0);
  uint8_t bytes[48];
  size_t used = sizeof(bytes);
  for (Eigen::Index i = 0; i < mask.size(); ++i) {
    if (used == sizeof(bytes)) {
      if (random(random_context, bytes, sizeof(bytes)) != 0) return Status::Internal();
      used = 0;
    }
    const uint32_t draw = uint32_t{bytes[used]} | uint32_t{bytes[used + 1]} << 8 | uint32_t{bytes[used + 2]} << 16;
    used += 3;
    mask.data()[i] = draw < threshold ? S(0) : keep;
  }
  return Status::Ok();
}

template <typename S>
Status ApplyMask(ConstMatrixMap<S> mask, MatrixMap<S> x) {
  if (mask.rows() != x.rows() || mask.cols() != x.cols()) return Status::InvalidArgument();
  x.array() *= mask.array();
  return Status::Ok();
}

#define NODEFL_GNN_DENSE(S)                                                                                      \
  template Status LinearForward<S>(ConstMatrixMap<S>, ConstMatrixMap<S>, ConstRowMap<S>, MatrixMap<S>);         \
  template Status LinearBackward<S>(ConstMatrixMap<S>, ConstMatrixMap<S>, ConstMatrixMap<S>, MatrixMap<S>,       \
                                    RowMap<S>, MatrixMap<S>*);                                                   \
  template void Relu<S>(MatrixMap<S>);                                                                           \
  template Status ReluBackward<S>(ConstMatrixMap<S>, MatrixMap<S>);                                              \
  template Status DropoutMask<S>(S, MatrixMap<S>, crypto::RandomFunction, void*);                                \
  template Status ApplyMask<S>(ConstMatrixMap<S>, MatrixMap<S>);
NODEFL_GNN_DENSE(float)
NODEFL_GNN_DENSE(double)
#undef NODEFL_GNN_DENSE

}  // namespace nodefl::gnn
