// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/training/central.h"

#include <chrono>
#include <cmath>
#include <random>

#include "nodefl/gnn/dense.h"
#include "nodefl/gnn/losses.h"

namespace nodefl::server::lumos {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Dropout draws for the model (the training process is not a device: a
// seeded engine is enough).
struct SeededRandom {
  std::mt19937_64 rng;
  static int Fill(void* ctx, unsigned char* out, size_t n) {
    auto* self = static_cast<SeededRandom*>(ctx);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(self->rng() >> 56);
    return 0;
  }
};

void InitBlock(std::vector<float>& p, const gnn::ParamBlock& b, std::mt19937_64& rng) {
  if (b.size() == 0) return;
  // Glorot uniform over (fan_in, fan_out); attention vectors use their own shape.
  const double limit = std::sqrt(6.0 / (double(b.rows) + double(b.cols)));
  std::uniform_real_distribution<double> u(-limit, limit);
  for (size_t i = 0; i < b.size(); ++i) p[b.offset + i] = static_cast<float>(u(rng));
}

}  // namespace

std::vector<float> InitialParameters(const gnn::ParamLayout& l, uint64_t seed) {
  std::vector<float> p(l.total, 0.0f);
  std::mt19937_64 rng(seed);
  for (int layer = 0; layer < 2; ++layer) {
    InitBlock(p, l.w[layer], rng);
    InitBlock(p, l.att_src[layer], rng);
    InitBlock(p, l.att_dst[layer], rng);
  }
  InitBlock(p, l.classifier_w, rng);
  return p;  // biases stay zero
}

CentralResult TrainCentralNodeClassifier(const dataset::Graph& g, const std::vector<Split>& split,
                                         const CentralOptions& options,
                                         const std::function<void(const EpochMetrics&)>& progress) {
  CentralResult r;
  const auto started = Clock::now();
  const uint32_t n = g.num_nodes;
  if (g.num_feature_dims == 0) {
    r.error = g.name + ": the dataset has no features (features.tsv); node classification needs them";
    return r;
  }
  if (g.num_label_classes < 2 || g.label_offsets.size() != size_t{n} + 1) {
    r.error = g.name + ": the dataset has no labels (labels.tsv)";
    return r;
  }
  std::vector<uint32_t> label(n, UINT32_MAX);
  for (uint32_t v = 0; v < n; ++v) {
    const uint64_t count = g.label_offsets[v + 1] - g.label_offsets[v];
    if (count > 1) {
      r.error = g.name + ": node " + std::to_string(v) + " has several labels; node classification is single-label";
      return r;
    }
    if (count == 1) label[v] = g.labels[g.label_offsets[v]];
  }
  if (split.size() != n) {
    r.error = "the split has " + std::to_string(split.size()) + " nodes, the graph " + std::to_string(n);
    return r;
  }
  gnn::ModelShape shape = options.shape;
  shape.features = g.num_feature_dims;
  shape.classes = g.num_label_classes;
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  if (!layout.ok()) {
    r.error = "invalid model shape (heads must divide hidden and out; dropout in [0, 1))";
    return r;
  }
  r.parameters = layout->total;
  // The whole graph as one GraphView.
  std::vector<uint32_t> row_begin(size_t{n} + 1), csr(g.neighbours.begin(), g.neighbours.end());
  for (uint32_t v = 0; v <= n; ++v) row_begin[v] = static_cast<uint32_t>(g.offsets[v]);
  const gnn::GraphView graph{n, Span<const uint32_t>(row_begin), Span<const uint32_t>(csr)};
  std::vector<float> h0(size_t{n} * shape.features, 0.0f);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t i = g.feature_offsets[v]; i < g.feature_offsets[v + 1]; ++i) {
      h0[size_t{v} * shape.features + g.features[i]] = 1.0f;
    }
  }
  std::vector<float> workspace(gnn::WorkspaceScalars(shape, n, static_cast<uint32_t>(csr.size())));
  gnn::GnnModel<float> model;
  if (!model.Bind(shape, graph, Span<float>(workspace)).ok()) {
    r.error = "cannot bind the model";
    return r;
  }
  std::vector<float> params = InitialParameters(*layout, options.seed), grads(layout->total);
  Adam adam(layout->total, options.adam);
  SeededRandom random{std::mt19937_64(options.seed ^ 0x9e3779b97f4a7c15ULL)};
  std::vector<uint32_t> train_nodes;
  for (uint32_t v = 0; v < n; ++v) {
    if (split[v] == Split::kTrain && label[v] != UINT32_MAX) train_nodes.push_back(v);
  }
  if (train_nodes.empty()) {
    r.error = "no labelled training node";
    return r;
  }
  const gnn::ConstMatrixMap<float> x(h0.data(), n, shape.features);
  std::vector<float> d_out(size_t{n} * shape.out), logits(shape.classes), d_logits(shape.classes),
      d_emb(shape.out);
  const gnn::ConstMatrixMap<float> wc = gnn::ParamView(Span<const float>(params), layout->classifier_w);
  for (uint32_t epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto epoch_started = Clock::now();
    EpochMetrics m;
    m.epoch = epoch;
    std::fill(grads.begin(), grads.end(), 0.0f);
    std::fill(d_out.begin(), d_out.end(), 0.0f);
    if (!model.Forward(Span<const float>(params), x, true, &SeededRandom::Fill, &random).ok()) {
      r.error = "forward failed";
      return r;
    }
    const gnn::ConstMatrixMap<float> emb = model.output();
    const float inv = 1.0f / static_cast<float>(train_nodes.size());
    double loss_sum = 0;
    for (uint32_t v : train_nodes) {
      gnn::ConstMatrixMap<float> hv(emb.data() + size_t{v} * shape.out, 1, shape.out);
      gnn::MatrixMap<float> z(logits.data(), 1, shape.classes);
      (void)gnn::LinearForward<float>(hv, wc,
                                      gnn::ConstRowMap<float>(params.data() + layout->classifier_b.offset,
                                                              shape.classes),
                                      z);
      Result<float> loss = gnn::SoftmaxCrossEntropy<float>(gnn::ConstRowMap<float>(logits.data(), shape.classes),
                                                           label[v], gnn::RowMap<float>(d_logits.data(), shape.classes));
      loss_sum += *loss;
      for (float& d : d_logits) d *= inv;  // the mean over training nodes
      gnn::MatrixMap<float> d_h(d_out.data() + size_t{v} * shape.out, 1, shape.out);
      (void)gnn::LinearBackward<float>(hv, wc, gnn::ConstMatrixMap<float>(d_logits.data(), 1, shape.classes),
                                       gnn::ParamView(Span<float>(grads), layout->classifier_w),
                                       gnn::RowMap<float>(grads.data() + layout->classifier_b.offset, shape.classes),
                                       &d_h);
    }
    m.loss = loss_sum / static_cast<double>(train_nodes.size());
    if (!model.Backward(Span<const float>(params), x, gnn::ConstMatrixMap<float>(d_out.data(), n, shape.out),
                        Span<float>(grads))
             .ok() ||
        !adam.Step(std::span<float>(params), std::span<const float>(grads))) {
      r.error = "backward or update failed at epoch " + std::to_string(epoch);
      return r;
    }
    // Evaluation without dropout.
    if (!model.Forward(Span<const float>(params), x, false, nullptr, nullptr).ok()) {
      r.error = "forward failed";
      return r;
    }
    uint64_t correct[kSplits] = {0, 0, 0}, total[kSplits] = {0, 0, 0};
    for (uint32_t v = 0; v < n; ++v) {
      if (label[v] == UINT32_MAX) continue;
      gnn::ConstMatrixMap<float> hv(model.output().data() + size_t{v} * shape.out, 1, shape.out);
      (void)gnn::LinearForward<float>(hv, wc,
                                      gnn::ConstRowMap<float>(params.data() + layout->classifier_b.offset,
                                                              shape.classes),
                                      gnn::MatrixMap<float>(logits.data(), 1, shape.classes));
      const int s = static_cast<int>(split[v]);
      ++total[s];
      correct[s] += gnn::ArgMax<float>(gnn::ConstRowMap<float>(logits.data(), shape.classes)) == label[v] ? 1 : 0;
    }
    for (int s = 0; s < kSplits; ++s) m.accuracy[s] = total[s] ? double(correct[s]) / double(total[s]) : 0.0;
    m.seconds = SecondsSince(epoch_started);
    if (epoch == 1 || m.accuracy[1] > r.best_validation) {
      r.best_validation = m.accuracy[1];
      r.test_at_best = m.accuracy[2];
      r.best_epoch = epoch;
    }
    r.epochs.push_back(m);
    if (progress) progress(m);
  }
  r.seconds = SecondsSince(started);
  return r;
}

}  // namespace nodefl::server::lumos
