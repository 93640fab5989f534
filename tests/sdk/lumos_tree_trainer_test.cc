// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TreeTrainer across a federation of devices, in one process: every device
// runs the model on its own tree, leaf embeddings are pooled across devices
// (Lumos Eq. 31), losses are taken at the pooled embeddings, and the pool's
// gradient goes back to every device whose leaf took part. The sum of the
// devices' gradient contributions must be the gradient of the sum of the
// losses: checked against central finite differences of the whole
// federation (features exact, as with the noise off), for GCN and GAT,
// with and without dropout, on trees and on ego stars.
#include "gnn_test_support.h"
#include "nodefl/lumos/tree_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace nodefl::lumos {
namespace {

using ::nodefl::testing::RandomValues;
using ::nodefl::testing::ReplayRandom;

using gnn::LayerKind;
using gnn::ModelShape;
using gnn::TreeKind;

// A small graph and who keeps which edge: 0 keeps by 'a' (the lower id),
// 1 by 'b', 2 by both. Vertex 5 keeps nothing (all its edges are kept by
// the other end), vertex 2 is a hub.
struct Federation {
  uint32_t n = 7;
  std::vector<std::pair<uint32_t, uint32_t>> edges = {{0, 1}, {0, 2}, {1, 2}, {2, 3}, {2, 4},
                                                      {2, 5}, {3, 4}, {4, 5}, {5, 6}, {1, 6}};
  std::vector<int> keeper = {0, 2, 1, 0, 0, 0, 2, 0, 1, 0};
  std::vector<std::vector<uint32_t>> kept;  // N_u, ascending
  std::vector<uint32_t> labels = {0, 1, 2, 1, 0, 2, 1};
  std::vector<bool> labelled = {true, true, false, true, true, true, true};

  Federation() {
    kept.resize(n);
    for (size_t e = 0; e < edges.size(); ++e) {
      const auto [a, b] = edges[e];
      if (keeper[e] == 0 || keeper[e] == 2) kept[a].push_back(b);
      if (keeper[e] == 1 || keeper[e] == 2) kept[b].push_back(a);
    }
    for (auto& l : kept) std::sort(l.begin(), l.end());
  }
};

struct Device {
  std::vector<uint32_t> rows, csr;
  std::vector<double> scalars;
  TreeTrainer<double> trainer;
  ReplayRandom random;
};

class FederatedStep {
 public:
  FederatedStep(const Federation& f, const ModelShape& shape, TreeKind kind, bool train, uint64_t seed)
      : f_(f), shape_(shape), train_(train) {
    features_ = RandomValues(size_t{f.n} * shape.features, seed);
    for (uint32_t u = 0; u < f.n; ++u) {
      auto d = std::make_unique<Device>();
      const uint32_t wl = static_cast<uint32_t>(f.kept[u].size());
      const TrainerSizing size = SizeTrainer(shape, kind, wl);
      d->rows.resize(size.row_begin);
      d->csr.resize(size.csr);
      d->scalars.resize(size.scalars);
      EXPECT_TRUE(d->trainer.Bind(shape, kind, wl, Span<uint32_t>(d->rows), Span<uint32_t>(d->csr),
                                  Span<double>(d->scalars))
                      .ok());
      // Lumos Eq. 25: own leaves carry x_u, the leaf of pair k x of N_u[k].
      gnn::MatrixMap<double> h0 = d->trainer.features();
      const gnn::TreeNodes& at = d->trainer.nodes();
      for (uint32_t k = 0; k < at.own_leaves(); ++k) h0.row(at.OwnLeaf(k)) = X(u);
      for (uint32_t k = 0; k < wl; ++k) h0.row(at.NeighbourLeaf(k)) = X(f.kept[u][k]);
      d->random.seed = seed * 31 + u;
      devices_.push_back(std::move(d));
    }
  }

  Eigen::Map<const Eigen::RowVectorXd> X(uint32_t v) const {
    return Eigen::Map<const Eigen::RowVectorXd>(features_.data() + size_t{v} * shape_.features, shape_.features);
  }

  // The federation's total loss; with `grads`, also the devices' summed
  // gradient contributions.
  double Run(const std::vector<double>& params, std::vector<double>* grads) {
    const Span<const double> p(params);
    for (auto& d : devices_) {
      d->random.Reset();
      EXPECT_TRUE(d->trainer.Forward(p, train_, &ReplayRandom::Fill, &d->random).ok());
      d->trainer.ClearGradients();
    }
    // Pooling: every device's own leaves, plus one leaf in each keeper's tree.
    for (uint32_t v = 0; v < f_.n; ++v) devices_[v]->trainer.BeginPool();
    for (uint32_t u = 0; u < f_.n; ++u) {
      for (uint32_t k = 0; k < f_.kept[u].size(); ++k) {
        const gnn::ConstRowMap<double> leaf = devices_[u]->trainer.NeighbourLeaf(k);
        EXPECT_TRUE(devices_[f_.kept[u][k]]->trainer.AddToPool(Span<const double>(leaf.data(), leaf.size())).ok());
      }
    }
    std::vector<double> scratch(params.size(), 0.0);
    std::vector<double>& g = grads != nullptr ? *grads : scratch;
    double total = 0;
    std::vector<double> pool_grad(shape_.out);
    for (uint32_t v = 0; v < f_.n; ++v) {
      if (!f_.labelled[v]) continue;
      Result<double> loss = devices_[v]->trainer.SupervisedLoss(p, f_.labels[v], Span<double>(g));
      EXPECT_TRUE(loss.ok());
      total += *loss;
      // The pool's gradient to every leaf that stands for v.
      EXPECT_TRUE(devices_[v]->trainer.PoolGradient(Span<double>(pool_grad)).ok());
      EXPECT_TRUE(devices_[v]->trainer.SetOwnLeafGradient(Span<const double>(pool_grad)).ok());
      for (uint32_t u = 0; u < f_.n; ++u) {
        const auto& l = f_.kept[u];
        const auto it = std::lower_bound(l.begin(), l.end(), v);
        if (it == l.end() || *it != v) continue;
        const uint32_t k = static_cast<uint32_t>(it - l.begin());
        EXPECT_TRUE(devices_[u]->trainer.SetNeighbourLeafGradient(k, Span<const double>(pool_grad)).ok());
      }
    }
    if (grads != nullptr) {
      for (auto& d : devices_) EXPECT_TRUE(d->trainer.Backward(p, Span<double>(*grads)).ok());
    }
    return total;
  }

  const TreeTrainer<double>& trainer(uint32_t v) const { return devices_[v]->trainer; }

 private:
  const Federation& f_;
  ModelShape shape_;
  bool train_;
  std::vector<double> features_;
  std::vector<std::unique_ptr<Device>> devices_;
};

void CheckFederatedGradient(LayerKind layer, TreeKind kind, bool train, uint64_t seed) {
  const Federation f;
  ModelShape shape;
  shape.layer = layer;
  shape.features = 5;
  shape.hidden = 8;
  shape.out = 4;
  shape.heads = 2;
  shape.classes = 3;
  shape.dropout = 0.25f;
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  ASSERT_TRUE(layout.ok());
  std::vector<double> params = RandomValues(layout->total, seed + 7, 0.5);
  FederatedStep step(f, shape, kind, train, seed);
  std::vector<double> grads(layout->total, 0.0);
  step.Run(params, &grads);
  // The pools: own leaves plus one per keeper.
  for (uint32_t v = 0; v < f.n; ++v) {
    uint32_t keepers = 0;
    for (uint32_t u = 0; u < f.n; ++u) keepers += std::count(f.kept[u].begin(), f.kept[u].end(), v) ? 1 : 0;
    const uint32_t own = kind == TreeKind::kLumosTree ? static_cast<uint32_t>(f.kept[v].size()) : 1;
    EXPECT_EQ(step.trainer(v).pool_count(), own + keepers) << v;
  }
  double scale = 1e-3;
  for (double g : grads) scale = std::max(scale, std::fabs(g));
  size_t nonzero = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double saved = params[i];
    params[i] = saved + 1e-6;
    const double up = step.Run(params, nullptr);
    params[i] = saved - 1e-6;
    const double down = step.Run(params, nullptr);
    params[i] = saved;
    const double numeric = (up - down) / 2e-6;
    EXPECT_NEAR(grads[i], numeric, 1e-6 * scale + 1e-7) << "parameter " << i;
    nonzero += std::fabs(numeric) > 1e-9 ? 1 : 0;
  }
  // Every layer reached: most parameters move the loss.
  EXPECT_GT(nonzero, params.size() / 2);
}

TEST(LumosTreeTrainerTest, FederatedGcnGradientIsTheGradientOfTheFederationsLoss) {
  CheckFederatedGradient(LayerKind::kGcn, TreeKind::kLumosTree, false, 1);
  CheckFederatedGradient(LayerKind::kGcn, TreeKind::kLumosTree, true, 2);
}

TEST(LumosTreeTrainerTest, FederatedGatGradientIsTheGradientOfTheFederationsLoss) {
  CheckFederatedGradient(LayerKind::kGat, TreeKind::kLumosTree, false, 3);
  CheckFederatedGradient(LayerKind::kGat, TreeKind::kLumosTree, true, 4);
}

TEST(LumosTreeTrainerTest, WithoutVirtualNodesTheEgoStarTrainsTheSameWay) {
  CheckFederatedGradient(LayerKind::kGcn, TreeKind::kEgoStar, false, 5);
  CheckFederatedGradient(LayerKind::kGat, TreeKind::kEgoStar, true, 6);
}

TEST(LumosTreeTrainerTest, RefusalsAndPrediction) {
  ModelShape shape;
  shape.features = 3;
  shape.classes = 2;
  const TrainerSizing size = SizeTrainer(shape, TreeKind::kLumosTree, 2);
  std::vector<uint32_t> rows(size.row_begin), csr(size.csr);
  std::vector<float> scalars(size.scalars);
  TreeTrainer<float> t;
  std::vector<float> short_scalars(size.scalars - 1);
  EXPECT_EQ(t.Bind(shape, TreeKind::kLumosTree, 2, Span<uint32_t>(rows), Span<uint32_t>(csr),
                   Span<float>(short_scalars))
                .code(),
            StatusCode::kResourceExhausted);
  ASSERT_TRUE(t.Bind(shape, TreeKind::kLumosTree, 2, Span<uint32_t>(rows), Span<uint32_t>(csr), Span<float>(scalars))
                  .ok());
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  std::vector<float> params(layout->total, 0.1f), grads(layout->total, 0.0f);
  // No pool yet.
  EXPECT_EQ(t.SupervisedLoss(Span<const float>(params), 0, Span<float>(grads)).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(t.Forward(Span<const float>(params), false, nullptr, nullptr).ok());
  t.BeginPool();
  EXPECT_EQ(t.pool_count(), 2u);
  EXPECT_EQ(t.SupervisedLoss(Span<const float>(params), 2, Span<float>(grads)).status().code(),
            StatusCode::kInvalidArgument);
  // The classifier's bias decides when everything else is symmetric.
  params[layout->classifier_b.offset + 1] = 3.0f;
  Result<uint32_t> predicted = t.Predict(Span<const float>(params));
  ASSERT_TRUE(predicted.ok());
  EXPECT_EQ(*predicted, 1u);
  std::vector<float> wrong(shape.out + 1);
  EXPECT_FALSE(t.AddToPool(Span<const float>(wrong)).ok());
  EXPECT_FALSE(t.SetNeighbourLeafGradient(2, Span<const float>(wrong.data(), shape.out)).ok());
}

}  // namespace
}  // namespace nodefl::lumos
