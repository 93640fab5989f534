// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/training/central.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "nodefl/gnn/dense.h"
#include "nodefl/gnn/losses.h"
#include "nodefl/gnn/model.h"
#include "nodefl/protocol/lumos/train_format.h"

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

// The dataset's binary features as a dense nodes x d matrix.
std::vector<float> RawFeatures(const dataset::Graph& g) {
  std::vector<float> h0(size_t{g.num_nodes} * g.num_feature_dims, 0.0f);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    for (uint64_t i = g.feature_offsets[v]; i < g.feature_offsets[v + 1]; ++i) {
      h0[size_t{v} * g.num_feature_dims + g.features[i]] = 1.0f;
    }
  }
  return h0;
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
  const std::vector<float> h0 = RawFeatures(g);
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

namespace {

bool IsNeighbour(const dataset::Graph& g, uint32_t v, uint32_t w) {
  const auto first = g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]);
  const auto last = g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]);
  return std::binary_search(first, last, w);  // sorted (graph_dataset.h)
}

gnn::GraphView TrainingGraph(const LinkGraph& lg) {
  return gnn::GraphView{lg.nodes, Span<const uint32_t>(lg.row_begin), Span<const uint32_t>(lg.neighbours)};
}

// Buffers for one node's rows, reused across nodes and epochs.
template <typename S>
struct LinkScratch {
  std::vector<S> positives, negatives, d_positives, d_negatives, d_u;
};

// Eq. 33 of every node at the embeddings `emb`: returns the losses' sum and
// adds the gradient at every embedding, times `scale`, into d_out. A node's
// loss reaches its own embedding and those of its positives and negatives.
template <typename S>
double AddLinkLosses(const LinkGraph& lg, gnn::ConstMatrixMap<S> emb, S scale, gnn::MatrixMap<S> d_out,
                     LinkScratch<S>& b) {
  const Eigen::Index d = emb.cols();
  b.d_u.resize(static_cast<size_t>(d));
  double sum = 0;
  for (uint32_t u = 0; u < lg.nodes; ++u) {
    const uint32_t p0 = lg.row_begin[u], p = lg.row_begin[u + 1] - p0;
    const uint32_t q0 = lg.negative_begin[u], q = lg.negative_begin[u + 1] - q0;
    if (p + q == 0) continue;
    b.positives.resize(size_t{p} * static_cast<size_t>(d));
    b.negatives.resize(size_t{q} * static_cast<size_t>(d));
    b.d_positives.resize(b.positives.size());
    b.d_negatives.resize(b.negatives.size());
    gnn::MatrixMap<S> pos(b.positives.data(), p, d), neg(b.negatives.data(), q, d);
    for (uint32_t r = 0; r < p; ++r) pos.row(r) = emb.row(lg.neighbours[p0 + r]);
    for (uint32_t r = 0; r < q; ++r) neg.row(r) = emb.row(lg.negatives[q0 + r]);
    gnn::MatrixMap<S> d_pos(b.d_positives.data(), p, d), d_neg(b.d_negatives.data(), q, d);
    gnn::RowMap<S> d_u(b.d_u.data(), d);
    Result<S> loss = gnn::LinkLoss<S>(gnn::ConstRowMap<S>(emb.data() + size_t{u} * static_cast<size_t>(d), d),
                                      gnn::ConstMatrixMap<S>(b.positives.data(), p, d),
                                      gnn::ConstMatrixMap<S>(b.negatives.data(), q, d), d_u, d_pos, d_neg);
    if (!loss.ok()) continue;  // shapes are ours: cannot happen
    sum += static_cast<double>(*loss);
    d_out.row(u) += scale * d_u;
    for (uint32_t r = 0; r < p; ++r) d_out.row(lg.neighbours[p0 + r]) += scale * d_pos.row(r);
    for (uint32_t r = 0; r < q; ++r) d_out.row(lg.negatives[q0 + r]) += scale * d_neg.row(r);
  }
  return sum;
}

void ScorePairs(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, gnn::ConstMatrixMap<float> emb,
                ScoreHistogram& h) {
  for (const auto& [u, v] : pairs) ++h[nodefl::lumos::ScoreBin(emb.row(u).dot(emb.row(v)))];
}

// The first epoch, or a validation AUC above the best so far (an undefined
// one, NaN, never wins against a defined one).
bool BetterAuc(double candidate, double best, bool first) {
  return first || (!std::isnan(candidate) && (std::isnan(best) || candidate > best));
}

}  // namespace

std::string BuildLinkGraph(const dataset::Graph& g, const LinkOptions& o, LinkGraph* out) {
  if (g.num_feature_dims == 0) {
    return g.name + ": the dataset has no features (features.tsv); link prediction needs them";
  }
  const uint32_t n = g.num_nodes;
  LinkGraph lg;
  lg.nodes = n;
  lg.features = g.num_feature_dims;
  lg.h0 = RawFeatures(g);
  lg.row_begin.assign(1, 0);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      const uint32_t w = g.neighbours[i];
      const uint8_t split = nodefl::lumos::EdgeSplitOf(o.edge_seed, v, w);
      if (split == 0) {
        lg.neighbours.push_back(w);
      } else if (v < w) {
        (split == 1 ? lg.validation : lg.test).emplace_back(v, w);
      }
    }
    lg.row_begin.push_back(static_cast<uint32_t>(lg.neighbours.size()));
  }
  if (lg.neighbours.empty()) return g.name + ": no edge in the training split; nothing to train on";
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  const std::vector<std::vector<Partner>> partners = LinkPartners(ids, o.negatives, o.eval_negatives, o.partner_seed);
  lg.negative_begin.assign(1, 0);
  for (uint32_t v = 0; v < n; ++v) {
    for (const Partner& p : partners[v]) {
      // A drawn partner that is a neighbour (any split) is skipped, as the
      // devices skip it.
      if (IsNeighbour(g, v, p.id)) continue;
      if (p.use == PartnerUse::kTraining) {
        lg.negatives.push_back(p.id);
      } else if (v < p.id) {
        lg.eval_negatives.emplace_back(v, p.id);
      }
    }
    lg.negative_begin.push_back(static_cast<uint32_t>(lg.negatives.size()));
  }
  *out = std::move(lg);
  return {};
}

template <typename S>
Result<S> CentralLinkLoss(const gnn::ModelShape& shape_in, const LinkGraph& lg, Span<const S> params,
                          Span<S> grads) {
  gnn::ModelShape shape = shape_in;
  shape.features = lg.features;
  shape.classes = 0;
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  if (!layout.ok()) return layout.status();
  if (params.size() != layout->total || grads.size() != layout->total || lg.terms() == 0 ||
      lg.h0.size() != size_t{lg.nodes} * lg.features) {
    return Status::InvalidArgument();
  }
  std::vector<S> workspace(gnn::WorkspaceScalars(shape, lg.nodes, static_cast<uint32_t>(lg.neighbours.size())));
  gnn::GnnModel<S> model;
  NODEFL_TRY(model.Bind(shape, TrainingGraph(lg), Span<S>(workspace)));
  const std::vector<S> h0(lg.h0.begin(), lg.h0.end());
  const gnn::ConstMatrixMap<S> x(h0.data(), lg.nodes, lg.features);
  NODEFL_TRY(model.Forward(params, x, false, nullptr, nullptr));
  std::vector<S> d_out(size_t{lg.nodes} * shape.out, S(0));
  LinkScratch<S> scratch;
  const S scale = S(1) / static_cast<S>(lg.terms());
  const double sum = AddLinkLosses<S>(lg, model.output(), scale, gnn::MatrixMap<S>(d_out.data(), lg.nodes, shape.out),
                                      scratch);
  NODEFL_TRY(
      model.Backward(params, x, gnn::ConstMatrixMap<S>(d_out.data(), lg.nodes, shape.out), grads));
  return static_cast<S>(sum / static_cast<double>(lg.terms()));
}

template Result<float> CentralLinkLoss<float>(const gnn::ModelShape&, const LinkGraph&, Span<const float>,
                                              Span<float>);
template Result<double> CentralLinkLoss<double>(const gnn::ModelShape&, const LinkGraph&, Span<const double>,
                                                Span<double>);

CentralLinkResult TrainCentralLinkPredictor(const dataset::Graph& g, const CentralOptions& options,
                                            const LinkOptions& link,
                                            const std::function<void(const LinkEpochMetrics&)>& progress) {
  CentralLinkResult r;
  const auto started = Clock::now();
  LinkGraph lg;
  r.error = BuildLinkGraph(g, link, &lg);
  if (!r.error.empty()) return r;
  gnn::ModelShape shape = options.shape;
  shape.features = lg.features;
  shape.classes = 0;  // no classifier
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  if (!layout.ok()) {
    r.error = "invalid model shape (heads must divide hidden and out; dropout in [0, 1))";
    return r;
  }
  r.parameters = layout->total;
  r.edges[0] = lg.neighbours.size() / 2;
  r.edges[1] = lg.validation.size();
  r.edges[2] = lg.test.size();
  r.negatives = lg.negatives.size();
  r.eval_negatives = lg.eval_negatives.size();
  const uint32_t n = lg.nodes;
  std::vector<float> workspace(gnn::WorkspaceScalars(shape, n, static_cast<uint32_t>(lg.neighbours.size())));
  gnn::GnnModel<float> model;
  if (!model.Bind(shape, TrainingGraph(lg), Span<float>(workspace)).ok()) {
    r.error = "cannot bind the model";
    return r;
  }
  std::vector<float> params = InitialParameters(*layout, options.seed), grads(layout->total);
  Adam adam(layout->total, options.adam);
  SeededRandom random{std::mt19937_64(options.seed ^ 0x9e3779b97f4a7c15ULL)};
  const gnn::ConstMatrixMap<float> x(lg.h0.data(), n, shape.features);
  std::vector<float> d_out(size_t{n} * shape.out);
  LinkScratch<float> scratch;
  const float scale = 1.0f / static_cast<float>(lg.terms());  // the mean over every term
  for (uint32_t epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto epoch_started = Clock::now();
    LinkEpochMetrics m;
    m.epoch = epoch;
    m.terms = lg.terms();
    std::fill(grads.begin(), grads.end(), 0.0f);
    std::fill(d_out.begin(), d_out.end(), 0.0f);
    if (!model.Forward(Span<const float>(params), x, true, &SeededRandom::Fill, &random).ok()) {
      r.error = "forward failed";
      return r;
    }
    m.loss = AddLinkLosses<float>(lg, model.output(), scale, gnn::MatrixMap<float>(d_out.data(), n, shape.out),
                                  scratch) /
             static_cast<double>(m.terms);
    if (!model.Backward(Span<const float>(params), x, gnn::ConstMatrixMap<float>(d_out.data(), n, shape.out),
                        Span<float>(grads))
             .ok() ||
        !adam.Step(std::span<float>(params), std::span<const float>(grads))) {
      r.error = "backward or update failed at epoch " + std::to_string(epoch);
      return r;
    }
    // Evaluation without dropout, on binned scores as the devices send them.
    if (!model.Forward(Span<const float>(params), x, false, nullptr, nullptr).ok()) {
      r.error = "forward failed";
      return r;
    }
    ScoreHistogram validation{}, test{}, negatives{};
    ScorePairs(lg.validation, model.output(), validation);
    ScorePairs(lg.test, model.output(), test);
    ScorePairs(lg.eval_negatives, model.output(), negatives);
    m.validation_auc = BinnedAuc(validation, negatives);
    m.test_auc = BinnedAuc(test, negatives);
    m.seconds = SecondsSince(epoch_started);
    if (BetterAuc(m.validation_auc, r.best_validation, epoch == 1)) {
      r.best_validation = m.validation_auc;
      r.test_at_best = m.test_auc;
      r.best_epoch = epoch;
    }
    r.epochs.push_back(m);
    if (progress) progress(m);
  }
  r.seconds = SecondsSince(started);
  return r;
}

}  // namespace nodefl::server::lumos
