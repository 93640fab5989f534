// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/tree_trainer.h"

#include "nodefl/gnn/dense.h"
#include "nodefl/gnn/losses.h"

namespace nodefl::lumos {
namespace {

size_t ClassesOf(const gnn::ModelShape& s) { return s.classes > 0 ? s.classes : 1; }

}  // namespace

TrainerSizing SizeTrainer(const gnn::ModelShape& shape, gnn::TreeKind kind, uint32_t workload) {
  const gnn::TreeSize size = gnn::SizeOfTree(kind, workload);
  TrainerSizing t;
  t.row_begin = size_t{size.nodes} + 1;
  t.csr = size.csr_entries;
  t.scalars = size_t{size.nodes} * shape.features       // features
              + gnn::WorkspaceScalars(shape, size.nodes, size.csr_entries)
              + size_t{size.nodes} * shape.out          // gradient at the output
              + 3 * size_t{shape.out}                   // pool sum, pooled, d_pooled
              + 2 * ClassesOf(shape);                   // logits, d_logits
  return t;
}

template <typename S>
Status TreeTrainer<S>::Bind(const gnn::ModelShape& shape, gnn::TreeKind kind, uint32_t workload,
                            Span<uint32_t> row_begin, Span<uint32_t> csr, Span<S> scalars) {
  bound_ = forward_done_ = false;
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  if (!layout.ok()) return layout.status();
  const TrainerSizing need = SizeTrainer(shape, kind, workload);
  if (row_begin.size() < need.row_begin || csr.size() < need.csr || scalars.size() < need.scalars) {
    return Status::ResourceExhausted();
  }
  Result<gnn::GraphView> graph = gnn::BuildTree(kind, workload, row_begin, csr);
  if (!graph.ok()) return graph.status();
  shape_ = shape;
  nodes_ = gnn::TreeNodes{kind, workload};
  graph_ = *graph;
  const size_t n = graph_.nodes;
  S* cursor = scalars.data();
  h0_ = cursor;
  cursor += n * shape.features;
  const size_t workspace = gnn::WorkspaceScalars(shape, graph_.nodes, static_cast<uint32_t>(graph_.neighbours.size()));
  NODEFL_TRY(model_.Bind(shape, graph_, Span<S>(cursor, workspace)));
  cursor += workspace;
  d_out_ = cursor;
  cursor += n * shape.out;
  pool_sum_ = cursor;
  cursor += shape.out;
  pooled_ = cursor;
  cursor += shape.out;
  d_pooled_ = cursor;
  cursor += shape.out;
  logits_ = cursor;
  cursor += ClassesOf(shape);
  d_logits_ = cursor;
  for (size_t i = 0; i < need.scalars; ++i) scalars[i] = S(0);
  pool_count_ = 0;
  bound_ = true;
  return Status::Ok();
}

template <typename S>
Status TreeTrainer<S>::Forward(Span<const S> params, bool train, crypto::RandomFunction random,
                               void* random_context) {
  if (!bound_) return Status::FailedPrecondition();
  forward_done_ = false;
  NODEFL_TRY(model_.Forward(params, gnn::ConstMatrixMap<S>(h0_, graph_.nodes, shape_.features), train, random,
                            random_context));
  forward_done_ = true;
  return Status::Ok();
}

template <typename S>
gnn::ConstRowMap<S> TreeTrainer<S>::NeighbourLeaf(uint32_t k) const {
  return gnn::ConstRowMap<S>(model_.output().data() + size_t{nodes_.NeighbourLeaf(k)} * shape_.out, shape_.out);
}

template <typename S>
gnn::ConstRowMap<S> TreeTrainer<S>::OwnLeaf(uint32_t k) const {
  return gnn::ConstRowMap<S>(model_.output().data() + size_t{nodes_.OwnLeaf(k)} * shape_.out, shape_.out);
}

template <typename S>
void TreeTrainer<S>::BeginPool() {
  gnn::RowMap<S> sum(pool_sum_, shape_.out);
  sum.setZero();
  gnn::RowMap<S>(pooled_, shape_.out).setZero();
  pool_count_ = 0;
  if (!forward_done_) return;
  for (uint32_t k = 0; k < nodes_.own_leaves(); ++k) {
    sum += OwnLeaf(k);
    ++pool_count_;
  }
  FinishPool();
}

template <typename S>
Status TreeTrainer<S>::AddToPool(Span<const S> embedding) {
  if (!bound_ || embedding.size() != shape_.out) return Status::InvalidArgument();
  gnn::RowMap<S>(pool_sum_, shape_.out) += gnn::ConstRowMap<S>(embedding.data(), shape_.out);
  ++pool_count_;
  FinishPool();
  return Status::Ok();
}

template <typename S>
void TreeTrainer<S>::FinishPool() {
  // Eq. 31 with the average.
  if (pool_count_ == 0) return;
  gnn::RowMap<S>(pooled_, shape_.out) = gnn::RowMap<S>(pool_sum_, shape_.out) / static_cast<S>(pool_count_);
}

template <typename S>
Result<S> TreeTrainer<S>::SupervisedLoss(Span<const S> params, uint32_t label, Span<S> grads) {
  if (!bound_ || shape_.classes == 0 || pool_count_ == 0) return Status::FailedPrecondition();
  const gnn::ParamLayout& l = model_.layout();
  if (params.size() < l.total || grads.size() < l.total) return Status::InvalidArgument();
  if (label >= shape_.classes) return Status::InvalidArgument();
  const gnn::ConstMatrixMap<S> x(pooled_, 1, shape_.out);
  gnn::MatrixMap<S> z(logits_, 1, shape_.classes);
  NODEFL_TRY(gnn::LinearForward<S>(x, gnn::ParamView(params, l.classifier_w),
                                   gnn::ConstRowMap<S>(params.data() + l.classifier_b.offset, shape_.classes), z));
  Result<S> loss = gnn::SoftmaxCrossEntropy<S>(gnn::ConstRowMap<S>(logits_, shape_.classes), label,
                                               gnn::RowMap<S>(d_logits_, shape_.classes));
  if (!loss.ok()) return loss.status();
  gnn::MatrixMap<S> d_x(d_pooled_, 1, shape_.out);
  gnn::RowMap<S> d_b(grads.data() + l.classifier_b.offset, shape_.classes);
  NODEFL_TRY(gnn::LinearBackward<S>(x, gnn::ParamView(params, l.classifier_w),
                                    gnn::ConstMatrixMap<S>(d_logits_, 1, shape_.classes),
                                    gnn::ParamView(grads, l.classifier_w), d_b, &d_x));
  return loss;
}

template <typename S>
Result<uint32_t> TreeTrainer<S>::Predict(Span<const S> params) {
  if (!bound_ || shape_.classes == 0 || pool_count_ == 0) return Status::FailedPrecondition();
  const gnn::ParamLayout& l = model_.layout();
  if (params.size() < l.total) return Status::InvalidArgument();
  NODEFL_TRY(gnn::LinearForward<S>(gnn::ConstMatrixMap<S>(pooled_, 1, shape_.out),
                                   gnn::ParamView(params, l.classifier_w),
                                   gnn::ConstRowMap<S>(params.data() + l.classifier_b.offset, shape_.classes),
                                   gnn::MatrixMap<S>(logits_, 1, shape_.classes)));
  return gnn::ArgMax<S>(gnn::ConstRowMap<S>(logits_, shape_.classes));
}

template <typename S>
Result<S> TreeTrainer<S>::Evaluate(Span<const S> params, uint32_t label, bool* correct) {
  Result<uint32_t> predicted = Predict(params);  // leaves the logits in logits_
  if (!predicted.ok()) return predicted.status();
  if (label >= shape_.classes) return Status::InvalidArgument();
  if (correct != nullptr) *correct = *predicted == label;
  return gnn::SoftmaxCrossEntropy<S>(gnn::ConstRowMap<S>(logits_, shape_.classes), label,
                                     gnn::RowMap<S>(d_logits_, shape_.classes));
}

template <typename S>
Status TreeTrainer<S>::PoolGradient(Span<S> out) const {
  if (!bound_ || pool_count_ == 0 || out.size() != shape_.out) return Status::InvalidArgument();
  const S inv = S(1) / static_cast<S>(pool_count_);
  for (uint32_t i = 0; i < shape_.out; ++i) out[i] = d_pooled_[i] * inv;
  return Status::Ok();
}

template <typename S>
void TreeTrainer<S>::ClearGradients() {
  if (!bound_) return;
  gnn::MatrixMap<S>(d_out_, graph_.nodes, shape_.out).setZero();
  gnn::RowMap<S>(d_pooled_, shape_.out).setZero();
}

template <typename S>
Status TreeTrainer<S>::SetOwnLeafGradient(Span<const S> gradient) {
  if (!bound_ || gradient.size() != shape_.out) return Status::InvalidArgument();
  for (uint32_t k = 0; k < nodes_.own_leaves(); ++k) {
    gnn::RowMap<S>(d_out_ + size_t{nodes_.OwnLeaf(k)} * shape_.out, shape_.out) +=
        gnn::ConstRowMap<S>(gradient.data(), shape_.out);
  }
  return Status::Ok();
}

template <typename S>
Status TreeTrainer<S>::SetNeighbourLeafGradient(uint32_t k, Span<const S> gradient) {
  if (!bound_ || k >= nodes_.workload || gradient.size() != shape_.out) return Status::InvalidArgument();
  gnn::RowMap<S>(d_out_ + size_t{nodes_.NeighbourLeaf(k)} * shape_.out, shape_.out) +=
      gnn::ConstRowMap<S>(gradient.data(), shape_.out);
  return Status::Ok();
}

template <typename S>
Status TreeTrainer<S>::Backward(Span<const S> params, Span<S> grads) {
  if (!bound_ || !forward_done_) return Status::FailedPrecondition();
  return model_.Backward(params, gnn::ConstMatrixMap<S>(h0_, graph_.nodes, shape_.features),
                         gnn::ConstMatrixMap<S>(d_out_, graph_.nodes, shape_.out), grads);
}

template class TreeTrainer<float>;
template class TreeTrainer<double>;

}  // namespace nodefl::lumos
