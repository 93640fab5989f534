// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-lumos-train-sim: Lumos training (Sec. VI) on a whole dataset in
// one process, without messages or noise: every device's TreeTrainer on its
// tree from the exact trimming (or untrimmed trees), raw features on every
// leaf, leaf embeddings pooled across devices by hand, Adam on the mean
// gradient, the same split and hyper-parameters as the job. It says what
// the tree model itself reaches when nothing is noised, so that a gap of the
// federated job to it is the noise's (or a bug's), and a gap of it to the
// centralized GCN is the model's. In tests/ because it joins device code
// (TreeTrainer) and server code (Adam, splits, trimming), as the trim fleet
// tool does.
//
// --secure-clip C emulates the job's secure sum (lumos_secure_sum) exactly:
// each device's gradient contribution in the fixed-point code the server
// picks for n devices (clip C, the largest power-of-two scale with
// n * round(C * scale) < 2^31), the codes summed mod 2^32 (in the real
// aggregation the masks cancel), the sum decoded; it prints how many values
// were clipped. --gradient-stats keeps each device's contribution apart
// too, in float, and prints the distribution of its values' magnitudes
// (what a clip must cover). Node classification only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/lumos/tree_trainer.h"
#include "nodefl/privacy/one_bit_encoder.h"
#include "nodefl/protocol/lumos/train_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/lumos/training/adam.h"
#include "nodefl/server/lumos/training/central.h"
#include "nodefl/server/lumos/training/link_task.h"
#include "nodefl/gnn/losses.h"
#include "nodefl/server/lumos/training/splits.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace {

namespace sl = nodefl::server::lumos;
using nodefl::Span;
constexpr const char* kTool = "nodefl-lumos-train-sim";

struct Options {
  std::string graph;
  std::string model = "gcn";
  std::string tree = "tree";
  std::string trim = "exact";
  uint32_t epochs = 100;
  uint64_t seed = 1;
  uint32_t every = 10;
  double epsilon = 0;        // > 0: one-bit features as the job sends them (Lumos Eq. 26-27)
  std::string mode = "paper";  // with --epsilon: paper (raw own leaves) or strict (the union encoding)
  uint32_t projection = 0;     // > 0: the job's public random projection of the features (ProjectFeatures)
  uint64_t projection_seed = 1;
  std::string task = "node";   // node classification, or link prediction (Eq. 33 with the sign fixed)
  uint64_t edge_seed = 1;      // link: EdgeSplitOf's seed
  uint32_t negatives = 4, eval_negatives = 2;  // link: partners per device (LinkPartners)
  double secure_clip = 0;       // > 0: the job's secure sum, emulated (see the header)
  bool gradient_stats = false;  // each device's contribution apart: the magnitudes of its values
};

// Each device's gradient contribution kept apart (--secure-clip,
// --gradient-stats): summed in the fixed-point code of the job's secure
// sum, or in float; and the magnitudes of its values counted.
class DeviceSums {
 public:
  DeviceSums(size_t total, uint32_t devices, double clip) : sum_(total, 0), codes_(total), floats_(total, 0.0) {
    if (clip <= 0) return;
    code_.clip = static_cast<float>(clip);
    for (int k = 30; k >= -120; --k) {
      code_.scale = static_cast<float>(std::ldexp(1.0, k));
      if (nodefl::secagg::MaxSummands(code_) >= devices) {
        scale_log2_ = k;
        break;
      }
    }
    secure_ = true;
  }
  void BeginEpoch() {
    std::fill(sum_.begin(), sum_.end(), 0u);
    std::fill(floats_.begin(), floats_.end(), 0.0);
  }
  void Add(const std::vector<float>& contribution) {
    for (float x : contribution) {
      const double a = std::fabs(double{x});
      largest_ = std::max(largest_, a);
      for (int b = 0; b < kBuckets; ++b) above_[b] += a > std::ldexp(1.0, 2 * b) ? 1 : 0;
    }
    values_ += contribution.size();
    if (!secure_) {
      for (size_t i = 0; i < contribution.size(); ++i) floats_[i] += contribution[i];
      return;
    }
    auto clipped = nodefl::secagg::EncodeFixedPoint(code_, Span<const float>(contribution), Span<uint32_t>(codes_));
    clipped_ += clipped.ok() ? *clipped : 0;
    for (size_t i = 0; i < codes_.size(); ++i) sum_[i] += codes_[i];  // mod 2^32, as the aggregation sums
  }
  void Decode(std::vector<float>& out) const {
    if (!secure_) {
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(floats_[i]);
      return;
    }
    (void)nodefl::secagg::DecodeFixedPointSum(code_, Span<const uint32_t>(sum_), Span<float>(out));
  }
  void Print() const {
    if (secure_) {
      std::printf("secure sum code: clip %g, scale 2^%d; %llu of %llu device values clipped\n", double{code_.clip},
                  scale_log2_, static_cast<unsigned long long>(clipped_), static_cast<unsigned long long>(values_));
    }
    std::printf("device gradient values: %llu, largest |value| %g; above 1, 4, 16, 64, 256, 1024:",
                static_cast<unsigned long long>(values_), largest_);
    for (int b = 0; b < kBuckets; ++b) std::printf(" %llu", static_cast<unsigned long long>(above_[b]));
    std::printf("\n");
  }

 private:
  static constexpr int kBuckets = 6;  // 4^0 .. 4^5
  bool secure_ = false;
  nodefl::secagg::FixedPoint code_;
  int scale_log2_ = 0;
  std::vector<uint32_t> sum_, codes_;
  std::vector<double> floats_;
  uint64_t clipped_ = 0, values_ = 0, above_[kBuckets] = {};
  double largest_ = 0;
};

struct Device {
  std::vector<uint32_t> kept;  // N_u
  std::vector<uint32_t> rows, csr;
  std::vector<float> scalars;
  nodefl::lumos::TreeTrainer<float> t;
};

int Fill(void* ctx, unsigned char* out, size_t n) {
  auto* rng = static_cast<std::mt19937_64*>(ctx);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>((*rng)() >> 56);
  return 0;
}

// Every device's forward pass, then every pool (Eq. 31): each device's own
// leaves and the leaves its keepers computed for it.
void ForwardAndPool(std::vector<std::unique_ptr<Device>>& devices,
                    const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& keepers,
                    const std::vector<float>& params, bool train, std::mt19937_64& rng) {
  for (auto& d : devices) {
    (void)d->t.Forward(Span<const float>(params), train, &Fill, &rng);
    d->t.ClearGradients();
  }
  for (size_t v = 0; v < devices.size(); ++v) {
    devices[v]->t.BeginPool();
    for (const auto& [u, k] : keepers[v]) {
      const auto leaf = devices[u]->t.NeighbourLeaf(k);
      (void)devices[v]->t.AddToPool(Span<const float>(leaf.data(), static_cast<size_t>(leaf.size())));
    }
  }
}

// Link prediction (Lumos Sec. VI-C, Eq. 33 with the sign fixed) the way
// the job runs it: positives are each device's kept training edges, the
// negatives its training partners (LinkPartners over every node, a drawn
// neighbour skipped); the gradient at every pooled embedding is gathered
// from every loss it appears in and sent back to its leaves; ROC-AUC over
// the binned scores of the held-out edges against the evaluation pairs.
int TrainLink(const Options& o, const nodefl::dataset::Graph& g, std::vector<std::unique_ptr<Device>>& devices,
              const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& keepers,
              const nodefl::gnn::ModelShape& shape, std::vector<float>& params, sl::Adam& adam,
              std::mt19937_64& rng) {
  const uint32_t n = g.num_nodes, out = shape.out;
  std::vector<std::vector<uint32_t>> adj(n);
  for (uint32_t v = 0; v < n; ++v) {
    adj[v].assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                  g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
    std::sort(adj[v].begin(), adj[v].end());
  }
  std::vector<uint32_t> ids(n);
  for (uint32_t v = 0; v < n; ++v) ids[v] = v;
  const auto partners = sl::LinkPartners(ids, o.negatives, o.eval_negatives, o.seed);
  std::vector<float> grads(params.size()), pool(out);
  std::vector<std::vector<float>> h(n, std::vector<float>(out)), dh(n, std::vector<float>(out));
  const auto started = std::chrono::steady_clock::now();
  double best_validation = 0, test_at_best = 0;
  uint32_t best_epoch = 0;
  for (uint32_t epoch = 1; epoch <= o.epochs + 1; ++epoch) {
    const bool train = epoch <= o.epochs;
    std::fill(grads.begin(), grads.end(), 0.0f);
    ForwardAndPool(devices, keepers, params, train, rng);
    for (uint32_t v = 0; v < n; ++v) {
      const auto p = devices[v]->t.pooled();
      std::copy(p.data(), p.data() + out, h[v].begin());
      std::fill(dh[v].begin(), dh[v].end(), 0.0f);
    }
    sl::ScoreHistogram positive[3] = {}, negative = {};
    auto dot = [&](uint32_t a, uint32_t b) {
      float s = 0;
      for (uint32_t i = 0; i < out; ++i) s += h[a][i] * h[b][i];
      return s;
    };
    double loss_sum = 0;
    uint64_t terms = 0;
    std::vector<float> rows, d_rows, du(out);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint32_t u : adj[v]) {
        const uint8_t split = nodefl::lumos::EdgeSplitOf(o.edge_seed, v, u);
        if (u > v && split != 0) ++positive[split][nodefl::lumos::ScoreBin(dot(v, u))];
      }
      std::vector<uint32_t> used;
      if (devices[v]->t.pool_count() > 0) used = devices[v]->kept;  // positives
      const size_t positives = used.size();
      for (const sl::Partner& p : partners[v]) {
        if (std::binary_search(adj[v].begin(), adj[v].end(), p.id)) continue;  // a neighbour: skipped
        if (p.use == sl::PartnerUse::kEvaluation) {
          if (p.id > v) ++negative[nodefl::lumos::ScoreBin(dot(v, p.id))];
        } else if (devices[v]->t.pool_count() > 0) {
          used.push_back(p.id);
        }
      }
      if (!train || used.empty()) continue;
      rows.assign(used.size() * out, 0.0f);
      d_rows.assign(used.size() * out, 0.0f);
      for (size_t r = 0; r < used.size(); ++r) std::copy(h[used[r]].begin(), h[used[r]].end(), rows.begin() + r * out);
      const auto O = static_cast<Eigen::Index>(out);
      const auto P = static_cast<Eigen::Index>(positives), Q = static_cast<Eigen::Index>(used.size() - positives);
      auto loss = nodefl::gnn::LinkLoss<float>(
          nodefl::gnn::ConstRowMap<float>(h[v].data(), O), nodefl::gnn::ConstMatrixMap<float>(rows.data(), P, O),
          nodefl::gnn::ConstMatrixMap<float>(rows.data() + positives * out, Q, O),
          nodefl::gnn::RowMap<float>(du.data(), O), nodefl::gnn::MatrixMap<float>(d_rows.data(), P, O),
          nodefl::gnn::MatrixMap<float>(d_rows.data() + positives * out, Q, O));
      if (!loss.ok()) continue;
      loss_sum += *loss;
      terms += used.size();
      for (uint32_t i = 0; i < out; ++i) dh[v][i] += du[i];
      for (size_t r = 0; r < used.size(); ++r) {
        for (uint32_t i = 0; i < out; ++i) dh[used[r]][i] += d_rows[r * out + i];
      }
    }
    const double auc_validation = sl::BinnedAuc(positive[1], negative), auc_test = sl::BinnedAuc(positive[2], negative);
    if (auc_validation > best_validation || best_epoch == 0) {
      best_validation = auc_validation;
      test_at_best = auc_test;
      best_epoch = epoch;
    }
    if (o.every && (epoch % o.every == 0 || epoch == 1 || !train)) {
      std::fprintf(stderr, "%s: epoch %u%s loss %.4f ROC-AUC validation %.4f test %.4f\n", kTool, epoch,
                   train ? "" : " (evaluation)", terms ? loss_sum / static_cast<double>(terms) : 0.0, auc_validation,
                   auc_test);
    }
    if (!train) {
      std::printf("sim lumos link %s %s (%s%s) on %s: epochs %u, last ROC-AUC validation %.4f test %.4f; "
                  "best validation %.4f at epoch %u, test %.4f there; %.1f s\n",
                  o.model.c_str(), o.tree.c_str(),
                  o.epsilon > 0 ? (o.mode + " one-bit features, epsilon " + std::to_string(o.epsilon)).c_str()
                                : "no noise",
                  o.projection > 0 ? (", projection " + std::to_string(o.projection)).c_str() : "", g.name.c_str(),
                  o.epochs, auc_validation, auc_test, best_validation, best_epoch, test_at_best,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      return 0;
    }
    // Each embedding's gradient to every leaf standing for it (Eq. 31).
    for (uint32_t v = 0; v < n; ++v) {
      auto& t = devices[v]->t;
      if (t.pool_count() == 0) continue;
      for (uint32_t i = 0; i < out; ++i) t.d_pooled()(static_cast<Eigen::Index>(i)) = dh[v][i];
      if (!t.PoolGradient(Span<float>(pool)).ok()) continue;
      (void)t.SetOwnLeafGradient(Span<const float>(pool));
      for (const auto& [u, k] : keepers[v]) (void)devices[u]->t.SetNeighbourLeafGradient(k, Span<const float>(pool));
    }
    for (auto& d : devices) (void)d->t.Backward(Span<const float>(params), Span<float>(grads));
    if (terms > 0) {
      for (float& gv : grads) gv /= static_cast<float>(terms);
      adam.Step(params, grads);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  namespace cli = nodefl::host::cli;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&o.graph))
      .Value("--model", cli::OneOf({"gcn", "gat"}, [&o](const std::string& v) { o.model = v; }))
      .Value("--tree", cli::OneOf({"tree", "ego"}, [&o](const std::string& v) { o.tree = v; }))
      .Value("--trim", cli::OneOf({"exact", "greedy", "none"}, [&o](const std::string& v) { o.trim = v; }))
      .Value("--epochs", cli::Whole(&o.epochs, 1, 100'000))
      .Value("--seed", cli::Whole(&o.seed, 0, UINT64_MAX))
      .Value("--every", cli::Whole(&o.every, 0, 100'000))
      .Value("--epsilon", cli::Real(&o.epsilon, 0.0, false, 1e6))
      .Value("--mode", cli::OneOf({"paper", "strict"}, [&o](const std::string& v) { o.mode = v; }))
      .Value("--projection", cli::Whole(&o.projection, 0, 65'535))
      .Value("--projection-seed", cli::Whole(&o.projection_seed, 0, UINT64_MAX))
      .Value("--task", cli::OneOf({"node", "link"}, [&o](const std::string& v) { o.task = v; }))
      .Value("--edge-seed", cli::Whole(&o.edge_seed, 0, UINT64_MAX))
      .Value("--negatives", cli::Whole(&o.negatives, 1, 32))
      .Value("--eval-negatives", cli::Whole(&o.eval_negatives, 1, 32))
      .Value("--secure-clip", cli::Real(&o.secure_clip, 0.0, true, 1e30))
      .Switch("--gradient-stats", [&o] { o.gradient_stats = true; });
  const cli::ParseOutcome parsed = flags.Parse(argc, argv);
  if (parsed == cli::ParseOutcome::kHelp) {
    std::printf(
        "usage: nodefl-lumos-train-sim --graph DIR [--model gcn|gat] [--tree tree|ego]\n"
        "                              [--trim exact|greedy|none] [--epochs N] [--seed S] [--every N]\n"
        "                              [--epsilon E [--mode paper|strict]] [--projection R]\n"
        "                              [--projection-seed S] [--task node|link [--edge-seed S]\n"
        "                              [--negatives Q] [--eval-negatives Q]]\n"
        "                              [--secure-clip C] [--gradient-stats]\n"
        "Lumos training in one process without noise (see the source's header).\n");
    return 0;
  }
  if (parsed == cli::ParseOutcome::kError) return 2;
  if (o.graph.empty()) {
    std::fprintf(stderr, "%s: --graph is required\n", kTool);
    return 2;
  }
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "%s: %s\n", kTool, loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  const bool link = o.task == "link";
  if (g.num_feature_dims == 0 || (!link && g.num_label_classes == 0)) {
    std::fprintf(stderr, "%s: %s needs features.tsv%s\n", kTool, o.graph.c_str(), link ? "" : " and labels.tsv");
    return 1;
  }
  const uint32_t n = g.num_nodes;
  // Trees: who keeps whom.
  const sl::TrimGraph tg(n, nodefl::dataset::UndirectedEdges(g));
  std::vector<std::unique_ptr<Device>> devices(n);
  for (auto& d : devices) d = std::make_unique<Device>();
  if (o.trim == "none") {
    for (uint32_t v = 0; v < n; ++v) {
      for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) devices[v]->kept.push_back(g.neighbours[i]);
    }
  } else {
    sl::Trimming t = sl::Greedy(tg);
    if (o.trim == "exact") t = sl::Exact(t);
    for (uint64_t e = 0; e < tg.num_edges(); ++e) {
      if (t.keeps(tg.a(e), e)) devices[tg.a(e)]->kept.push_back(tg.b(e));
      if (t.keeps(tg.b(e), e)) devices[tg.b(e)]->kept.push_back(tg.a(e));
    }
    for (auto& d : devices) std::sort(d->kept.begin(), d->kept.end());
  }
  if (link) {
    // Held-out edges carry no messages: only kept training edges make trees.
    for (uint32_t v = 0; v < n; ++v) {
      auto& kept = devices[v]->kept;
      kept.erase(std::remove_if(kept.begin(), kept.end(),
                                [&](uint32_t u) { return nodefl::lumos::EdgeSplitOf(o.edge_seed, v, u) != 0; }),
                 kept.end());
    }
  }
  nodefl::gnn::ModelShape shape;
  shape.layer = o.model == "gat" ? nodefl::gnn::LayerKind::kGat : nodefl::gnn::LayerKind::kGcn;
  shape.features = g.num_feature_dims;
  shape.classes = link ? 0 : g.num_label_classes;
  const nodefl::gnn::TreeKind kind = o.tree == "ego" ? nodefl::gnn::TreeKind::kEgoStar : nodefl::gnn::TreeKind::kLumosTree;
  std::vector<float> x(size_t{n} * shape.features, 0.0f);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t i = g.feature_offsets[v]; i < g.feature_offsets[v + 1]; ++i) x[size_t{v} * shape.features + g.features[i]] = 1;
  }
  if (o.projection > 0) {
    // What the devices feed the model with TrainParameters::projection.
    const uint32_t d = shape.features, r = o.projection;
    std::vector<float> projected(size_t{n} * r);
    for (uint32_t v = 0; v < n; ++v) {
      if (!nodefl::lumos::ProjectFeatures(o.projection_seed, Span<const float>(x.data() + size_t{v} * d, d),
                                          Span<float>(projected.data() + size_t{v} * r, r))
               .ok()) {
        std::fprintf(stderr, "%s: cannot project device %u's features\n", kTool, v);
        return 1;
      }
    }
    x.swap(projected);
    shape.features = r;
  }
  // With --epsilon: what each keeper receives of each device's features
  // (its bin, recovered), and what the device's own leaves carry.
  std::vector<std::vector<float>> received(n), own(n);  // received[u]: wl(u) x d, in pair order
  if (o.epsilon > 0) {
    const nodefl::PrivacyMode mode = o.mode == "strict" ? nodefl::PrivacyMode::kStrict : nodefl::PrivacyMode::kPaper;
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> keepers_of(n);  // v -> (u, k)
    for (uint32_t u = 0; u < n; ++u) {
      // Unreleased dims recover to the range's midpoint.
      received[u].assign(devices[u]->kept.size() * shape.features, o.projection > 0 ? 0.0f : 0.5f);
      for (uint32_t k = 0; k < devices[u]->kept.size(); ++k) keepers_of[devices[u]->kept[k]].push_back({u, k});
    }
    nodefl::Drbg noise;
    (void)noise.SeedDeterministic(o.seed, 7);
    const uint32_t d = shape.features;
    std::vector<uint32_t> dims(d);
    std::vector<float> enc(d), xv(d);
    for (uint32_t v = 0; v < n; ++v) {
      const uint32_t bins = std::max<uint32_t>(1, static_cast<uint32_t>(keepers_of[v].size()));
      // The range the job tells the encoder (train_format.h, ModelFeatureRange).
      const float lower = o.projection > 0 ? -0.5f : 0.0f, upper = o.projection > 0 ? 0.5f : 1.0f;
      auto params = nodefl::MakeOneBitParams(mode, o.epsilon, bins, d, lower, upper);
      if (!params.ok()) {
        std::fprintf(stderr, "%s: device %u: no one-bit parameters for epsilon %g, %u bins\n", kTool, v, o.epsilon, bins);
        return 1;
      }
      for (uint32_t f = 0; f < d; ++f) xv[f] = x[size_t{v} * d + f];
      (void)nodefl::AssignReleasedDimensions(noise, *params, Span<uint32_t>(dims));
      own[v].assign(d, 0.5f);
      for (uint32_t b = 0; b < bins; ++b) {
        (void)nodefl::EncodeOneBitPartial(noise, *params, Span<const float>(xv), Span<const uint32_t>(dims), b,
                                          Span<float>(enc));
        for (uint32_t f = 0; f < d; ++f) {
          if (dims[f] == b) own[v][f] = enc[f];
        }
        (void)nodefl::RecoverOneBit(*params, Span<const float>(enc), Span<float>(enc));
        if (b < keepers_of[v].size()) {
          const auto [u, k] = keepers_of[v][b];
          std::copy(enc.begin(), enc.end(), received[u].begin() + static_cast<std::ptrdiff_t>(size_t{k} * d));
        }
      }
      (void)nodefl::RecoverOneBit(*params, Span<const float>(own[v]), Span<float>(own[v]));
      if (mode == nodefl::PrivacyMode::kPaper) own[v] = xv;
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    Device& d = *devices[v];
    const uint32_t wl = static_cast<uint32_t>(d.kept.size());
    const nodefl::lumos::TrainerSizing size = nodefl::lumos::SizeTrainer(shape, kind, wl);
    d.rows.resize(size.row_begin);
    d.csr.resize(size.csr);
    d.scalars.resize(size.scalars);
    if (!d.t.Bind(shape, kind, wl, Span<uint32_t>(d.rows), Span<uint32_t>(d.csr), Span<float>(d.scalars)).ok()) {
      std::fprintf(stderr, "%s: device %u: cannot bind\n", kTool, v);
      return 1;
    }
    auto h0 = d.t.features();
    const auto& at = d.t.nodes();
    for (uint32_t k = 0; k < at.own_leaves(); ++k) {
      for (uint32_t f = 0; f < shape.features; ++f) {
        h0(at.OwnLeaf(k), f) = o.epsilon > 0 ? own[v][f] : x[size_t{v} * shape.features + f];
      }
    }
    for (uint32_t k = 0; k < wl; ++k) {
      for (uint32_t f = 0; f < shape.features; ++f) {
        h0(at.NeighbourLeaf(k), f) =
            o.epsilon > 0 ? received[v][size_t{k} * shape.features + f] : x[size_t{d.kept[k]} * shape.features + f];
      }
    }
  }
  std::vector<int32_t> label(n, -1);
  for (uint32_t v = 0; v < n; ++v) {
    if (g.label_offsets.size() == size_t{n} + 1 && g.label_offsets[v + 1] > g.label_offsets[v]) {
      label[v] = static_cast<int32_t>(g.labels[g.label_offsets[v]]);
    }
  }
  const std::vector<sl::Split> split = sl::SplitNodes(n, 1);
  const auto layout = nodefl::gnn::LayoutOf(shape);
  std::vector<float> params = sl::InitialParameters(*layout, o.seed), grads(layout->total), pool(shape.out);
  sl::Adam adam(layout->total, sl::AdamOptions{});
  std::mt19937_64 rng(o.seed);
  // Which device keeps v, and at which pair.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> keepers(n);
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t k = 0; k < devices[u]->kept.size(); ++k) keepers[devices[u]->kept[k]].push_back({u, k});
  }
  const auto started = std::chrono::steady_clock::now();
  double best_validation = 0, test_at_best = 0;
  uint32_t best_epoch = 0;
  if (link && (o.secure_clip > 0 || o.gradient_stats)) {
    std::fprintf(stderr, "%s: --secure-clip and --gradient-stats are for node classification\n", kTool);
    return 2;
  }
  if (link) return TrainLink(o, g, devices, keepers, shape, params, adam, rng);
  const bool apart = o.secure_clip > 0 || o.gradient_stats;
  DeviceSums sums(layout->total, n, o.secure_clip);
  std::vector<std::vector<float>> supervised(apart ? n : 0);  // each trained device's loss part
  std::vector<float> mine(apart ? layout->total : 0);
  for (uint32_t epoch = 1; epoch <= o.epochs + 1; ++epoch) {
    const bool train = epoch <= o.epochs;
    std::fill(grads.begin(), grads.end(), 0.0f);
    ForwardAndPool(devices, keepers, params, train, rng);
    uint32_t losses = 0, correct[3] = {0, 0, 0}, total[3] = {0, 0, 0};
    double loss_sum = 0;
    for (uint32_t v = 0; v < n; ++v) {
      auto& t = devices[v]->t;
      if (label[v] < 0 || t.pool_count() == 0) continue;
      const int s = static_cast<int>(split[v]);
      bool right = false;
      (void)t.Evaluate(Span<const float>(params), static_cast<uint32_t>(label[v]), &right);
      ++total[s];
      correct[s] += right ? 1 : 0;
      if (!train || split[v] != sl::Split::kTrain) continue;
      if (apart) supervised[v].assign(layout->total, 0.0f);
      auto loss = t.SupervisedLoss(Span<const float>(params), static_cast<uint32_t>(label[v]),
                                   Span<float>(apart ? supervised[v] : grads));
      if (!loss.ok() || !t.PoolGradient(Span<float>(pool)).ok()) continue;
      loss_sum += *loss;
      ++losses;
      (void)t.SetOwnLeafGradient(Span<const float>(pool));
      for (const auto& [u, k] : keepers[v]) (void)devices[u]->t.SetNeighbourLeafGradient(k, Span<const float>(pool));
    }
    double acc[3];
    for (int s = 0; s < 3; ++s) acc[s] = total[s] ? double(correct[s]) / total[s] : 0;
    if (acc[1] > best_validation || best_epoch == 0) {
      best_validation = acc[1];
      test_at_best = acc[2];
      best_epoch = epoch;
    }
    if (o.every && (epoch % o.every == 0 || epoch == 1 || !train)) {
      std::fprintf(stderr, "%s: epoch %u%s loss %.4f accuracy train %.4f validation %.4f test %.4f\n", kTool, epoch,
                   train ? "" : " (evaluation)", losses ? loss_sum / losses : 0.0, acc[0], acc[1], acc[2]);
    }
    if (!train) {
      std::printf("sim lumos %s %s (trim %s, %s) on %s: epochs %u, last train %.4f validation %.4f test %.4f; "
                  "best validation %.4f at epoch %u, test %.4f there; %.1f s\n",
                  o.model.c_str(), o.tree.c_str(), o.trim.c_str(),
                  (o.epsilon > 0 ? o.mode + " one-bit features, epsilon " + std::to_string(o.epsilon) : std::string("no noise"))
                      .append(o.projection > 0 ? ", projection " + std::to_string(o.projection) : std::string())
                      .c_str(),
                  g.name.c_str(), o.epochs, acc[0], acc[1], acc[2],
                  best_validation, best_epoch, test_at_best,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      break;
    }
    if (apart) {
      // Each device's contribution on its own: its loss part, then its tree.
      sums.BeginEpoch();
      for (uint32_t v = 0; v < n; ++v) {
        if (supervised[v].empty()) {
          std::fill(mine.begin(), mine.end(), 0.0f);
        } else {
          mine.swap(supervised[v]);
          supervised[v] = {};
        }
        (void)devices[v]->t.Backward(Span<const float>(params), Span<float>(mine));
        sums.Add(mine);
      }
      sums.Decode(grads);
    } else {
      for (auto& d : devices) (void)d->t.Backward(Span<const float>(params), Span<float>(grads));
    }
    if (losses > 0) {
      for (float& gv : grads) gv /= static_cast<float>(losses);
      adam.Step(params, grads);
    }
  }
  if (apart) sums.Print();
  return 0;
}
