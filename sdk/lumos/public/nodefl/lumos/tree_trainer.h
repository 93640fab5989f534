// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TreeTrainer: one device's share of a Lumos training step (Sec. VI), the
// arithmetic only; the training role moves its inputs and outputs between
// devices. For a device u with kept neighbours N_u (wl = |N_u|):
//
//   1. Features (Eq. 25): the caller fills u's own leaves and each
//      neighbour leaf (pair k stands for N_u[k]) in features(); virtual
//      nodes stay zero.
//   2. Forward: the two-layer model on T(u) (gnn/model.h).
//   3. Pooling (Eq. 31, average): u's embedding h_u is the mean of the
//      embeddings of every leaf that stands for u, in every tree: its own
//      wl leaves and one leaf in the tree of each device that keeps u.
//      BeginPool() sums the own leaves; AddToPool() adds each remote leaf
//      embedding; pooled() is the mean.
//   4. Loss at u on the pooled embedding: SupervisedLoss (Eq. 32 with
//      softmax cross-entropy; the classifier's gradient goes straight into
//      the gradient vector) or, with embeddings of other vertices, the link
//      loss (Eq. 33, sign fixed; gnn/losses.h).
//   5. Backward: the loss gradient at h_u reaches every leaf that stands for
//      u divided by the pool's size (PoolGradient()): u applies it to its
//      own leaves (SetOwnLeafGradient) and sends it to every device whose
//      leaf it pooled; each device sets what it receives on its neighbour
//      leaves (SetNeighbourLeafGradient) and back-propagates its tree into
//      its gradient contribution (Backward).
//
// The sum of every device's contribution is the gradient of the sum of the
// devices' losses (tests/sdk/lumos_tree_trainer_test.cc checks this against
// finite differences of the whole federation). Memory: caller-provided
// spans (TrainerSizing); no heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/gnn/graph.h"
#include "nodefl/gnn/model.h"

namespace nodefl::lumos {

struct TrainerSizing {
  size_t row_begin = 0;   // uint32_t
  size_t csr = 0;         // uint32_t
  size_t scalars = 0;     // S: features, workspace, gradients at the output, pool, scratch
};
TrainerSizing SizeTrainer(const gnn::ModelShape& shape, gnn::TreeKind kind, uint32_t workload);

template <typename S>
class TreeTrainer {
 public:
  // kInvalidArgument for a bad shape; kResourceExhausted for short spans.
  Status Bind(const gnn::ModelShape& shape, gnn::TreeKind kind, uint32_t workload, Span<uint32_t> row_begin,
              Span<uint32_t> csr, Span<S> scalars);

  uint32_t workload() const { return nodes_.workload; }
  const gnn::TreeNodes& nodes() const { return nodes_; }
  const gnn::ParamLayout& layout() const { return model_.layout(); }
  // nodes x features, zeroed at Bind; the caller fills the leaves.
  gnn::MatrixMap<S> features() { return gnn::MatrixMap<S>(h0_, graph_.nodes, shape_.features); }
  gnn::ConstMatrixMap<S> features() const { return gnn::ConstMatrixMap<S>(h0_, graph_.nodes, shape_.features); }

  Status Forward(Span<const S> params, bool train, crypto::RandomFunction random, void* random_context);
  // After Forward: the embedding of the leaf standing for N_u[k], and of
  // u's own leaf in pair k (for the ego star: u itself for every k).
  gnn::ConstRowMap<S> NeighbourLeaf(uint32_t k) const;
  gnn::ConstRowMap<S> OwnLeaf(uint32_t k) const;

  // Pooling of u's own embedding: BeginPool after Forward (it takes the own
  // leaves), AddToPool for each leaf embedding other devices computed.
  void BeginPool();
  Status AddToPool(Span<const S> embedding);
  uint32_t pool_count() const { return pool_count_; }
  gnn::ConstRowMap<S> pooled() const { return gnn::ConstRowMap<S>(pooled_, shape_.out); }

  // Softmax cross-entropy of the classifier on pooled(); adds the
  // classifier's gradient into grads and writes the gradient at pooled()
  // into d_pooled(). kFailedPrecondition without a classifier or before a
  // pool; kInvalidArgument for a label out of range.
  Result<S> SupervisedLoss(Span<const S> params, uint32_t label, Span<S> grads);
  // The classifier's prediction on pooled() (no gradient).
  Result<uint32_t> Predict(Span<const S> params);
  // The cross-entropy against `label` and whether the prediction is right,
  // without any gradient (validation and test nodes).
  Result<S> Evaluate(Span<const S> params, uint32_t label, bool* correct);
  // The gradient at pooled() (1 x out), for the caller's own losses too.
  gnn::RowMap<S> d_pooled() { return gnn::RowMap<S>(d_pooled_, shape_.out); }
  // d_pooled() / pool_count(): what every leaf standing for u receives.
  Status PoolGradient(Span<S> out) const;

  // The backward pass. ClearGradients() zeroes the output gradient; the
  // setters add to it.
  void ClearGradients();
  Status SetOwnLeafGradient(Span<const S> gradient);  // on every own leaf
  Status SetNeighbourLeafGradient(uint32_t k, Span<const S> gradient);
  Status Backward(Span<const S> params, Span<S> grads);

 private:
  gnn::ModelShape shape_;
  gnn::TreeNodes nodes_;
  gnn::GraphView graph_;
  gnn::GnnModel<S> model_;
  S* h0_ = nullptr;
  S* d_out_ = nullptr;
  void FinishPool();

  S* pool_sum_ = nullptr;
  S* pooled_ = nullptr;
  S* d_pooled_ = nullptr;
  S* logits_ = nullptr;
  S* d_logits_ = nullptr;
  uint32_t pool_count_ = 0;
  bool bound_ = false;
  bool forward_done_ = false;
};

}  // namespace nodefl::lumos
