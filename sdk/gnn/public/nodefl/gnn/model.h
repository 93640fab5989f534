// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The GNN a device runs on its tree (Lumos Sec. VI-B): two layers, GCN or
// GAT, with ReLU and dropout between them; the second layer's output is
// each node's embedding (Lumos pools the leaves' embeddings across devices,
// Eq. 31, and the losses read the pooled ones). The paper's setting
// (Sec. VIII-A): 2 layers, hidden and output 16, GAT with 4 heads, dropout
// 0.01. ReLU and dropout sit after the first layer only: an embedding that
// went through a final ReLU would be non-negative, and the link loss
// (Eq. 33) could never push a pair's score below zero.
//
// All parameters live in one flat vector (ParamLayout), so that a server
// averages and updates them as one vector and a device's gradient is one
// vector of the same layout. The classifier of Eq. 32 (supervised only) is
// part of the layout; the caller runs it (dense.h) on pooled embeddings.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/gnn/graph.h"
#include "nodefl/gnn/matrix.h"
#include "nodefl/gnn/model_shape.h"

namespace nodefl::gnn {

template <typename S>
inline ConstMatrixMap<S> ParamView(Span<const S> params, const ParamBlock& b) {
  return ConstMatrixMap<S>(params.data() + b.offset, b.rows, b.cols);
}
template <typename S>
inline MatrixMap<S> ParamView(Span<S> params, const ParamBlock& b) {
  return MatrixMap<S>(params.data() + b.offset, b.rows, b.cols);
}

template <typename S>
class GnnModel {
 public:
  // kInvalidArgument for a bad shape; kResourceExhausted when the workspace
  // is smaller than WorkspaceScalars().
  Status Bind(const ModelShape& shape, const GraphView& graph, Span<S> workspace);

  // h0: nodes x features (Lumos Eq. 25: a leaf's features, zero for
  // virtual nodes). train: dropout on, its mask drawn from `random`.
  // params: LayoutOf(shape).total values.
  Status Forward(Span<const S> params, ConstMatrixMap<S> h0, bool train, crypto::RandomFunction random,
                 void* random_context);
  // nodes x out, valid after Forward.
  ConstMatrixMap<S> output() const;

  // d_out: nodes x out, the loss gradient at each node's embedding (zero
  // where the embedding feeds nothing). Adds the parameters' gradient into
  // grads (same layout as params). Needs the Forward just before it, with
  // the same params and h0.
  Status Backward(Span<const S> params, ConstMatrixMap<S> h0, ConstMatrixMap<S> d_out, Span<S> grads);

  const ParamLayout& layout() const { return layout_; }
  const GraphView& graph() const { return graph_; }

 private:
  MatrixMap<S> Slice(size_t offset, size_t rows, size_t cols) const {
    return MatrixMap<S>(workspace_.data() + offset, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  }

  ModelShape shape_;
  ParamLayout layout_;
  GraphView graph_;
  Span<S> workspace_;
  bool bound_ = false;
  bool forward_done_ = false;
  // Workspace offsets.
  size_t z_[2] = {}, y_[2] = {}, alpha_[2] = {}, pre_[2] = {};
  size_t mask_ = 0, scores_ = 0, dz_ = 0, dy1_ = 0;
};

}  // namespace nodefl::gnn
