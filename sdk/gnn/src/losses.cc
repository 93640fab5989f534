// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/losses.h"

#include <cmath>

namespace nodefl::gnn {

template <typename S>
S LogSigmoid(S x) {
  // log sigma(x) = -log(1 + e^-x) = min(x, 0) - log1p(e^-|x|).
  return (x < 0 ? x : S(0)) - std::log1p(std::exp(-std::fabs(x)));
}

template <typename S>
S Sigmoid(S x) {
  if (x >= 0) return S(1) / (S(1) + std::exp(-x));
  const S e = std::exp(x);
  return e / (S(1) + e);
}

template <typename S>
Result<S> SoftmaxCrossEntropy(ConstRowMap<S> logits, uint32_t label, RowMap<S> d_logits) {
  if (logits.cols() == 0 || label >= static_cast<uint32_t>(logits.cols()) || d_logits.cols() != logits.cols()) {
    return Status::InvalidArgument();
  }
  const S top = logits.maxCoeff();
  S sum = 0;
  for (Eigen::Index i = 0; i < logits.cols(); ++i) {
    d_logits(i) = std::exp(logits(i) - top);
    sum += d_logits(i);
  }
  d_logits /= sum;  // the probabilities
  const S loss = -(logits(label) - top - std::log(sum));
  d_logits(label) -= 1;
  return loss;
}

template <typename S>
uint32_t ArgMax(ConstRowMap<S> logits) {
  uint32_t best = 0;
  for (Eigen::Index i = 1; i < logits.cols(); ++i) {
    if (logits(i) > logits(best)) best = static_cast<uint32_t>(i);
  }
  return best;
}

template <typename S>
Result<S> LinkLoss(ConstRowMap<S> h_u, ConstMatrixMap<S> positives, ConstMatrixMap<S> negatives, RowMap<S> d_u,
                   MatrixMap<S> d_positives, MatrixMap<S> d_negatives) {
  const Eigen::Index d = h_u.cols();
  if (d_u.cols() != d || (positives.rows() > 0 && positives.cols() != d) ||
      (negatives.rows() > 0 && negatives.cols() != d) || d_positives.rows() != positives.rows() ||
      d_negatives.rows() != negatives.rows() || (positives.rows() > 0 && d_positives.cols() != d) ||
      (negatives.rows() > 0 && d_negatives.cols() != d)) {
    return Status::InvalidArgument();
  }
  S loss = 0;
  d_u.setZero();
  for (Eigen::Index r = 0; r < positives.rows(); ++r) {
    const S x = h_u.dot(positives.row(r));
    loss -= LogSigmoid(x);
    const S g = Sigmoid(x) - S(1);  // d/dx of -log sigma(x)
    d_u += g * positives.row(r);
    d_positives.row(r) = g * h_u;
  }
  for (Eigen::Index r = 0; r < negatives.rows(); ++r) {
    const S x = h_u.dot(negatives.row(r));
    loss -= LogSigmoid(-x);
    const S g = Sigmoid(x);  // d/dx of -log sigma(-x)
    d_u += g * negatives.row(r);
    d_negatives.row(r) = g * h_u;
  }
  return loss;
}

#define NODEFL_GNN_LOSSES(S)                                                                          \
  template S LogSigmoid<S>(S);                                                                        \
  template Result<S> SoftmaxCrossEntropy<S>(ConstRowMap<S>, uint32_t, RowMap<S>);                     \
  template uint32_t ArgMax<S>(ConstRowMap<S>);                                                        \
  template Result<S> LinkLoss<S>(ConstRowMap<S>, ConstMatrixMap<S>, ConstMatrixMap<S>, RowMap<S>,     \
                                 MatrixMap<S>, MatrixMap<S>);
NODEFL_GNN_LOSSES(float)
NODEFL_GNN_LOSSES(double)
#undef NODEFL_GNN_LOSSES

}  // namespace nodefl::gnn
