// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/gcn.h"

#include <cmath>

namespace nodefl::gnn {

template <typename S>
void GcnPropagate(const GraphView& g, ConstMatrixMap<S> in, MatrixMap<S> out) {
  for (uint32_t i = 0; i < g.nodes; ++i) {
    const S di = static_cast<S>(g.degree(i) + 1);
    out.row(i) = in.row(i) / di;  // the self loop: 1 / sqrt(d_i d_i)
    for (uint32_t e = g.row_begin[i]; e < g.row_begin[i + 1]; ++e) {
      const uint32_t j = g.neighbours[e];
      const S dj = static_cast<S>(g.degree(j) + 1);
      out.row(i) += in.row(j) / std::sqrt(di * dj);
    }
  }
}

template <typename S>
Status GcnForward(const GraphView& g, ConstMatrixMap<S> h, ConstMatrixMap<S> w, ConstRowMap<S> b, MatrixMap<S> z,
                  MatrixMap<S> out) {
  const Eigen::Index n = g.nodes;
  if (h.rows() != n || w.rows() != h.cols() || b.cols() != w.cols() || z.rows() != n || z.cols() != w.cols() ||
      out.rows() != n || out.cols() != w.cols()) {
    return Status::InvalidArgument();
  }
  MultiplyRows(h, w, z, false);
  GcnPropagate<S>(g, ConstMatrixMap<S>(z.data(), z.rows(), z.cols()), out);
  out.rowwise() += b;
  return Status::Ok();
}

template <typename S>
Status GcnBackward(const GraphView& g, ConstMatrixMap<S> h, ConstMatrixMap<S> w, ConstMatrixMap<S> d_out,
                   MatrixMap<S> dz, MatrixMap<S> d_w, RowMap<S> d_b, MatrixMap<S>* d_h) {
  const Eigen::Index n = g.nodes;
  if (h.rows() != n || w.rows() != h.cols() || d_out.rows() != n || d_out.cols() != w.cols() || dz.rows() != n ||
      dz.cols() != w.cols() || d_w.rows() != w.rows() || d_w.cols() != w.cols() || d_b.cols() != w.cols() ||
      (d_h != nullptr && (d_h->rows() != n || d_h->cols() != h.cols()))) {
    return Status::InvalidArgument();
  }
  d_b += d_out.colwise().sum();
  GcnPropagate<S>(g, d_out, dz);  // Â is symmetric
  AddTransposedProduct(h, dz, d_w);
  if (d_h != nullptr) MultiplyTransposedRight(dz, w, *d_h);
  return Status::Ok();
}

template void GcnPropagate<float>(const GraphView&, ConstMatrixMap<float>, MatrixMap<float>);
template void GcnPropagate<double>(const GraphView&, ConstMatrixMap<double>, MatrixMap<double>);
template Status GcnForward<float>(const GraphView&, ConstMatrixMap<float>, ConstMatrixMap<float>, ConstRowMap<float>,
                                  MatrixMap<float>, MatrixMap<float>);
template Status GcnForward<double>(const GraphView&, ConstMatrixMap<double>, ConstMatrixMap<double>,
                                   ConstRowMap<double>, MatrixMap<double>, MatrixMap<double>);
template Status GcnBackward<float>(const GraphView&, ConstMatrixMap<float>, ConstMatrixMap<float>,
                                   ConstMatrixMap<float>, MatrixMap<float>, MatrixMap<float>, RowMap<float>,
                                   MatrixMap<float>*);
template Status GcnBackward<double>(const GraphView&, ConstMatrixMap<double>, ConstMatrixMap<double>,
                                    ConstMatrixMap<double>, MatrixMap<double>, MatrixMap<double>, RowMap<double>,
                                    MatrixMap<double>*);

}  // namespace nodefl::gnn
