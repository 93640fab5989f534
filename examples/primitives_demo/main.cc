// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-primitives-demo: every node of a graph runs as its own SDK device
// (own arena, own DRBG, own privacy ledger) and exercises the privacy
// primitives the federated jobs are built from, in both privacy modes:
//   1. FedWalk neighbour binning with noise (Alg. 2)
//   2. exponential-mechanism node encoding (000_... Eq. 9/12)
//   3. Lumos one-bit feature encoding to neighbours (Eq. 26-27)
//   4. GW-LDP multi-bit matrix encoding (Alg. 1)
// and prints what each costs (true epsilon) and what it preserves.
// It is host code (C++20); the SDK calls inside are the device's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/core/arena.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/platform/host_platform.h"
#include "nodefl/privacy/alias_table.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/privacy/exponential_mechanism.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/privacy/multi_bit_encoder.h"
#include "nodefl/privacy/one_bit_encoder.h"

namespace {

using nodefl::PrivacyMode;
using nodefl::Span;
using nodefl::Status;

constexpr uint16_t kPhaseBinning = 1;
constexpr uint16_t kPhaseEncoding = 2;
constexpr uint16_t kPhaseFeatures = 3;
constexpr PrivacyMode kModes[] = {PrivacyMode::kStrict, PrivacyMode::kPaper};

struct Options {
  std::string dataset;
  bool generate = false;
  double epsilon = 1.0;
  uint64_t seed = 1;
  bool secure = false;
  uint32_t encodings = 200;
};

void PrintHelp() {
  std::puts(
      "usage: nodefl-primitives-demo [--dataset DIR | --generate] [options]\n"
      "\n"
      "Runs every node of a graph as its own nodefl SDK device and exercises the\n"
      "privacy primitives (noisy neighbour binning, exponential-mechanism encoding,\n"
      "one-bit and multi-bit feature encoders) in strict and paper modes.\n"
      "\n"
      "  --dataset DIR    graph in the shared TSV layout (edges.tsv, labels.tsv,\n"
      "                   optional features.tsv)\n"
      "  --generate       use a generated 3-community planted-partition graph\n"
      "  --epsilon E      privacy parameter of every mechanism (default 1.0)\n"
      "  --seed N         deterministic DRBG seed, one stream per device (default 1)\n"
      "  --secure         seed every device's DRBG from OS entropy instead\n"
      "  --encodings N    exponential-mechanism draws per device (default 200)\n"
      "  --help           this text");
}

std::optional<Options> ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value (see --help)\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    auto parse_number = [](const char* text, double* out) {
      char* end = nullptr;
      *out = std::strtod(text, &end);
      return end != text && *end == '\0' && std::isfinite(*out);
    };
    double number = 0;
    if (arg == "--help" || arg == "-h") {
      PrintHelp();
      std::exit(0);
    } else if (arg == "--dataset") {
      const char* v = value("--dataset");
      if (!v) return std::nullopt;
      o.dataset = v;
    } else if (arg == "--generate") {
      o.generate = true;
    } else if (arg == "--secure") {
      o.secure = true;
    } else if (arg == "--epsilon" || arg == "--seed" || arg == "--encodings") {
      const char* v = value(arg.c_str());
      if (!v) return std::nullopt;
      if (!parse_number(v, &number) || number <= 0 ||
          (arg != "--epsilon" && number != std::floor(number))) {
        std::fprintf(stderr, "error: %s expects a positive %s, got '%s'\n", arg.c_str(),
                     arg == "--epsilon" ? "number" : "integer", v);
        return std::nullopt;
      }
      if (arg == "--epsilon") o.epsilon = number;
      if (arg == "--seed") o.seed = static_cast<uint64_t>(number);
      if (arg == "--encodings") o.encodings = static_cast<uint32_t>(number);
    } else {
      std::fprintf(stderr, "error: unknown argument '%s' (see --help)\n", arg.c_str());
      return std::nullopt;
    }
  }
  if (o.dataset.empty() == !o.generate) {
    std::fprintf(stderr, "error: give exactly one of --dataset DIR or --generate (see --help)\n");
    return std::nullopt;
  }
  return o;
}

// One simulated device. What it knows: its id, its own neighbour list, its
// own features, and whatever the "server" publishes. Its persistent state is
// its DRBG and its ledger; its working memory is an arena over RAM the app
// hands to the SDK. The demo runs devices one at a time on one thread, so they
// take turns on one scratch RAM region (reset before each device's turn).
struct Device {
  uint32_t id = 0;
  nodefl::Drbg rng;
  nodefl::LedgerEntry ledger_storage[8];
  // The demo shows both modes side by side, paper mode's large true costs
  // included, so its devices set no budget (a deployed device keeps the
  // default one, which refuses such releases).
  nodefl::PrivacyLedger ledger{Span<nodefl::LedgerEntry>(ledger_storage), nodefl::PrivacyBudget::Unlimited()};
  Span<const uint32_t> neighbours;
};

bool Check(Status s, const char* what, uint32_t device) {
  if (s.ok()) return true;
  std::fprintf(stderr, "error: device %u: %s failed: %s\n", device, what, s.str());
  return false;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Fleet {
  explicit Fleet(size_t ram_bytes) : ram(ram_bytes), arena(Span<uint8_t>(ram)) {}
  const nodefl::dataset::Graph* graph = nullptr;
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<uint8_t> ram;
  nodefl::Arena arena;  // the RAM the current device works in
};

// Seeds one DRBG per device per mode, so strict and paper runs see
// independent randomness and each is reproducible on its own.
bool SeedAll(Fleet& fleet, const Options& opt, const nodefl::Platform& platform, uint64_t stream_base) {
  for (auto& d : fleet.devices) {
    const Status s = opt.secure ? d->rng.SeedFromEntropy(platform.entropy, {})
                                : d->rng.SeedDeterministic(opt.seed, stream_base + d->id);
    if (!Check(s, "DRBG seeding", d->id)) return false;
  }
  return true;
}

// ---- 1. neighbour binning -------------------------------------------------
// Returns the published noisy degree vectors (n x k, row-major).
bool RunBinning(Fleet& fleet, PrivacyMode mode, double epsilon, const std::vector<uint32_t>& bin_of,
                uint32_t k, std::vector<double>* published) {
  const auto& g = *fleet.graph;
  published->assign(size_t{g.num_nodes} * k, 0.0);
  double abs_noise = 0, degree_error = 0, eps_spent = 0;
  for (auto& d : fleet.devices) {
    nodefl::Arena& arena = fleet.arena;
    arena.Reset();
    auto counts = arena.Allocate<uint32_t>(k);
    auto noised = arena.Allocate<double>(k);
    if (!Check(counts.status(), "arena", d->id) || !Check(noised.status(), "arena", d->id)) return false;
    for (uint32_t u : d->neighbours) (*counts)[bin_of[u]]++;
    if (!Check(nodefl::NoiseCounts(d->rng, mode, epsilon, *counts, *noised, &eps_spent),
               "NoiseCounts", d->id) ||
        !Check(d->ledger.Record(kPhaseBinning,
                                mode == PrivacyMode::kStrict ? nodefl::Mechanism::kDiscreteLaplace
                                                             : nodefl::Mechanism::kLaplace,
                                mode, eps_spent),
               "ledger", d->id)) {
      return false;
    }
    double noisy_degree = 0;
    for (uint32_t b = 0; b < k; ++b) {
      (*published)[size_t{d->id} * k + b] = (*noised)[b];
      abs_noise += std::fabs((*noised)[b] - (*counts)[b]);
      noisy_degree += (*noised)[b];
    }
    degree_error += std::fabs(noisy_degree - d->neighbours.size());
  }
  const double q = std::exp(-epsilon);
  const double theory = mode == PrivacyMode::kStrict ? 2 * q / (1 - q * q) : 1 / epsilon;
  std::printf("  %-6s  %-17s  %10.3f  %10.3f  %14.3f  %8.4f\n", nodefl::PrivacyModeName(mode),
              mode == PrivacyMode::kStrict ? "discrete Laplace" : "Laplace",
              abs_noise / (double(g.num_nodes) * k), theory, degree_error / g.num_nodes, eps_spent);
  return true;
}

// ---- 2. exponential-mechanism encoding ----------------------------------------
// Each device encodes its own id as FedWalk's walk encoder would, with the
// score -min(||c_v - c_w||_1, C) over the published degree vectors; clipping
// at C makes the score's sensitivity exactly C.
bool RunEncoding(Fleet& fleet, PrivacyMode mode, double epsilon, const std::vector<double>& published,
                 uint32_t k, uint32_t draws) {
  const auto& g = *fleet.graph;
  const uint32_t n = g.num_nodes;
  // C: the median pairwise distance, a public function of public data.
  std::vector<double> sample;
  for (uint32_t v = 0; v < n; v += std::max(1u, n / 64)) {
    for (uint32_t w = 0; w < n; w += std::max(1u, n / 64)) {
      double dist = 0;
      for (uint32_t b = 0; b < k; ++b) dist += std::fabs(published[v * k + b] - published[w * k + b]);
      sample.push_back(dist);
    }
  }
  const double clip = std::max(1.0, Median(sample));
  nodefl::ExponentialMechanismParams params{epsilon, clip, mode};
  auto true_eps = nodefl::ExponentialMechanismEpsilon(params);
  if (!true_eps.ok()) return Check(true_eps.status(), "ExponentialMechanismEpsilon", 0);

  uint64_t same_label = 0, self = 0, total = 0;
  double expected_same_uniform = 0;
  auto label_of = [&](uint32_t v) -> int64_t {
    return g.label_offsets[v] == g.label_offsets[v + 1] ? -1 : g.labels[g.label_offsets[v]];
  };
  for (auto& d : fleet.devices) {
    nodefl::Arena& arena = fleet.arena;
    arena.Reset();
    auto scores = arena.Allocate<double>(n);
    auto log_w = arena.Allocate<double>(n);
    auto prob = arena.Allocate<double>(n);
    auto alias = arena.Allocate<uint32_t>(n);
    if (!scores.ok() || !log_w.ok() || !prob.ok() || !alias.ok()) {
      return Check(Status::ResourceExhausted(), "arena (encoding tables)", d->id);
    }
    for (uint32_t w = 0; w < n; ++w) {
      double dist = 0;
      for (uint32_t b = 0; b < k; ++b) dist += std::fabs(published[d->id * k + b] - published[w * k + b]);
      (*scores)[w] = -std::min(dist, clip);
    }
    nodefl::AliasTable table;
    if (!Check(nodefl::ScoresToLogWeights(params, *scores, *log_w), "ScoresToLogWeights", d->id) ||
        !Check(table.Build(*log_w, *prob, *alias), "AliasTable::Build", d->id)) {
      return false;
    }
    // The draws estimate the encoder's output distribution; a real walk
    // releases one encoding per visit, so the ledger charges one release.
    for (uint32_t i = 0; i < draws; ++i) {
      const auto w = static_cast<uint32_t>(table.Sample(d->rng));
      same_label += label_of(w) == label_of(d->id);
      self += w == d->id;
      ++total;
    }
    if (!Check(d->rng.status(), "DRBG", d->id) ||
        !Check(d->ledger.Record(kPhaseEncoding, nodefl::Mechanism::kExponential, mode, *true_eps),
               "ledger", d->id)) {
      return false;
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    uint32_t same = 0;
    for (uint32_t w = 0; w < n; ++w) same += label_of(w) == label_of(v);
    expected_same_uniform += double(same) / n;
  }
  std::printf("  %-6s  %8.2f  %11.3f  %20.3f  %14.3f  %10.4f\n", nodefl::PrivacyModeName(mode), clip,
              *true_eps, double(same_label) / total, expected_same_uniform / n, double(self) / total);
  return true;
}

// ---- 3. one-bit features to neighbours ---------------------------------------
bool RunOneBit(Fleet& fleet, PrivacyMode mode, double epsilon, const std::vector<float>& features,
               uint32_t dims) {
  const auto& g = *fleet.graph;
  // received[u] = sum over neighbours v of v's recovered partial encoding to u.
  std::vector<double> received(size_t{g.num_nodes} * dims, 0.0), exact(received.size(), 0.0);
  double sent_bias = 0, sent_sq = 0, eps_element_max = 0, eps_receiver_max = 0, eps_all_max = 0;
  uint64_t sent = 0, packed_bytes = 0;
  for (auto& d : fleet.devices) {
    const uint32_t wl = static_cast<uint32_t>(d->neighbours.size());
    if (wl == 0) continue;
    auto params = nodefl::MakeOneBitParams(mode, epsilon, wl, dims, 0.0f, 1.0f);
    if (!Check(params.status(), "MakeOneBitParams", d->id)) return false;
    auto cost = nodefl::OneBitEpsilon(*params);
    if (!Check(cost.status(), "OneBitEpsilon", d->id)) return false;
    nodefl::Arena& arena = fleet.arena;
    arena.Reset();
    auto receiver_of = arena.Allocate<uint32_t>(dims);
    auto encoded = arena.Allocate<float>(dims);
    auto recovered = arena.Allocate<float>(dims);
    auto union_of_receivers = arena.Allocate<float>(dims);
    auto packed = arena.Allocate<uint8_t>(nodefl::OneBitPackedSize(dims));
    if (!receiver_of.ok() || !encoded.ok() || !recovered.ok() || !union_of_receivers.ok() || !packed.ok()) {
      return Check(Status::ResourceExhausted(), "arena (one-bit)", d->id);
    }
    Span<const float> x(features.data() + size_t{d->id} * dims, dims);
    // Strict mode also picks the m released dims here (the rest reach nobody).
    if (!Check(nodefl::AssignReleasedDimensions(d->rng, *params, *receiver_of), "AssignReleasedDimensions", d->id)) {
      return false;
    }
    for (float& v : *union_of_receivers) v = 0.5f;  // the midpoint of [0, 1]: what unreleased dims recover to
    for (uint32_t r = 0; r < wl; ++r) {
      const uint32_t u = d->neighbours[r];
      if (!Check(nodefl::EncodeOneBitPartial(d->rng, *params, x, *receiver_of, r, *encoded),
                 "EncodeOneBitPartial", d->id) ||
          !Check(nodefl::PackOneBit(*encoded, *packed), "PackOneBit", d->id)) {
        return false;
      }
      packed_bytes += packed->size();
      // Receiver side: unpack and recover (Eq. 27).
      if (!Check(nodefl::UnpackOneBit(*packed, *encoded), "UnpackOneBit", u) ||
          !Check(nodefl::RecoverOneBit(*params, *encoded, *recovered), "RecoverOneBit", u)) {
        return false;
      }
      for (uint32_t j = 0; j < dims; ++j) {
        received[size_t{u} * dims + j] += (*recovered)[j];
        exact[size_t{u} * dims + j] += x[j];
        if ((*receiver_of)[j] == r) (*union_of_receivers)[j] = (*recovered)[j];
      }
    }
    // Every dim as all receivers together recover it: unbiased in both modes.
    for (uint32_t j = 0; j < dims; ++j) {
      const double error = double{(*union_of_receivers)[j]} - x[j];
      sent_bias += error;
      sent_sq += error * error;
      ++sent;
    }
    if (!Check(d->ledger.Record(kPhaseFeatures, nodefl::Mechanism::kOneBit, mode, cost->all_receivers),
               "ledger", d->id)) {
      return false;
    }
    eps_element_max = std::max(eps_element_max, params->epsilon_per_element);
    eps_receiver_max = std::max(eps_receiver_max, cost->per_receiver);
    eps_all_max = std::max(eps_all_max, cost->all_receivers);
  }
  // How well do the noisy neighbourhood sums match the exact ones (what a GNN
  // layer would aggregate)? Cosine similarity per node, averaged.
  double cosine_sum = 0;
  uint32_t counted = 0;
  for (uint32_t u = 0; u < g.num_nodes; ++u) {
    double dot = 0, na = 0, nb = 0;
    for (uint32_t j = 0; j < dims; ++j) {
      const double a = received[size_t{u} * dims + j], b = exact[size_t{u} * dims + j];
      dot += a * b;
      na += a * a;
      nb += b * b;
    }
    if (na > 0 && nb > 0) {
      cosine_sum += dot / std::sqrt(na * nb);
      ++counted;
    }
  }
  const double n_sent = std::max<double>(1.0, double(sent));
  std::printf("  %-6s  %10.4f  %13.3f  %15.3f  %+9.4f  %9.3f  %9.3f  %9.1f\n",
              nodefl::PrivacyModeName(mode), eps_element_max, eps_receiver_max, eps_all_max,
              sent_bias / n_sent, std::sqrt(sent_sq / n_sent), counted ? cosine_sum / counted : 0.0,
              double(packed_bytes) / std::max<uint64_t>(1, g.num_edges * 2));
  return true;
}

// ---- 4. multi-bit matrix encoder ------------------------------------------------
bool RunMultiBit(nodefl::Drbg& rng, double epsilon, const std::vector<float>& features, uint32_t rows,
                 uint32_t dims) {
  for (uint32_t m : {1u, std::max(1u, dims / 4), dims}) {
    nodefl::MultiBitParams params{0.0f, 1.0f, epsilon, m};
    std::vector<int8_t> encoded(features.size());
    std::vector<float> recovered(features.size());
    if (!Check(nodefl::EncodeMultiBit(rng, params, features, rows, dims, encoded), "EncodeMultiBit", 0) ||
        !Check(nodefl::RecoverMultiBit(params, encoded, rows, dims, recovered), "RecoverMultiBit", 0)) {
      return false;
    }
    // Column means are what downstream aggregate statistics see; the recovery
    // is unbiased, so their error shrinks with the number of rows.
    double col_err = 0;
    for (uint32_t j = 0; j < dims; ++j) {
      double t = 0, r = 0;
      for (uint32_t i = 0; i < rows; ++i) {
        t += features[size_t{i} * dims + j];
        r += recovered[size_t{i} * dims + j];
      }
      col_err += std::fabs(t - r) / rows;
    }
    const uint64_t nonzero = static_cast<uint64_t>(
        std::count_if(encoded.begin(), encoded.end(), [](int8_t e) { return e != 0; }));
    auto per_cell = nodefl::MultiBitEpsilonPerCell(params, rows, dims);
    if (!Check(per_cell.status(), "MultiBitEpsilonPerCell", 0)) return false;
    std::printf("  m=%-5u  %10llu  %13.3g  %14.3f  %22.4f\n", m, static_cast<unsigned long long>(nonzero),
                *per_cell, *per_cell * double(nonzero), col_err / dims);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = ParseArgs(argc, argv);
  if (!opt) return 2;

  nodefl::dataset::Graph graph;
  if (opt->generate) {
    graph = nodefl::dataset::GeneratePlantedPartition(3, 30, 0.25, 0.02, opt->seed);
  } else {
    auto loaded = nodefl::dataset::LoadGraph(opt->dataset);
    if (!loaded.ok) {
      std::fprintf(stderr, "error: cannot load dataset: %s\n", loaded.error.c_str());
      return 1;
    }
    graph = std::move(loaded.graph);
  }
  const uint32_t n = graph.num_nodes;
  const uint32_t k = std::max(1u, static_cast<uint32_t>(std::floor(std::log(double(n)))));

  // Features in [0,1]^d: the dataset's binary features when it has them,
  // otherwise 32 synthetic dims drawn around the node's label (documented in
  // the output so nobody mistakes them for data).
  uint32_t dims = graph.num_feature_dims;
  // The demo holds the dense n x d feature matrix (and its encodings) in host
  // memory; refuse sizes that would not fit comfortably instead of thrashing.
  if (uint64_t{n} * std::max(dims, 32u) > 50'000'000ull) {
    std::fprintf(stderr,
                 "error: %s has %u nodes x %u feature dims; the demo keeps a dense copy and\n"
                 "       supports at most 5e7 cells (karate, lastfm, cora, blogcatalog fit)\n",
                 graph.name.c_str(), n, dims);
    return 1;
  }
  std::vector<float> features;
  const bool synthetic = dims == 0;
  nodefl::Drbg host_rng;
  if (!Check(host_rng.SeedDeterministic(opt->seed, 0xFEA7u), "DRBG seeding", 0)) return 1;
  if (synthetic) {
    dims = 32;
    features.assign(size_t{n} * dims, 0.0f);
    for (uint32_t v = 0; v < n; ++v) {
      const uint32_t label = graph.label_offsets[v] == graph.label_offsets[v + 1] ? 0 : graph.labels[graph.label_offsets[v]];
      for (uint32_t j = 0; j < dims; ++j) {
        const double centre = ((j + label) % 4 == 0) ? 0.8 : 0.2;
        features[size_t{v} * dims + j] = static_cast<float>(std::clamp(centre + 0.2 * (host_rng.UniformDouble() - 0.5), 0.0, 1.0));
      }
    }
  } else {
    features.assign(size_t{n} * dims, 0.0f);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint64_t i = graph.feature_offsets[v]; i < graph.feature_offsets[v + 1]; ++i) {
        features[size_t{v} * dims + graph.features[i]] = 1.0f;
      }
    }
  }

  std::printf("nodefl primitives demo\n");
  std::printf("graph %s: %u nodes, %llu edges, %u label classes; features: %u dims%s\n",
              graph.name.c_str(), n, static_cast<unsigned long long>(graph.num_edges), graph.num_label_classes,
              dims, synthetic ? " (synthetic, drawn around each node's label; the dataset has none)" : "");
  std::printf("epsilon %.3g per mechanism; DRBG: %s\n", opt->epsilon,
              opt->secure ? "CTR_DRBG seeded from OS entropy"
                          : "CTR_DRBG, deterministic seed (reproducible, not for production)");

  // The RAM a device needs for its largest phase (the encoding tables over
  // all n vertices, or the one-bit buffers), plus alignment slack.
  const size_t ram = std::max<size_t>(size_t{n} * (8 + 8 + 8 + 4), size_t{dims} * 16) + size_t{k} * 16 + 256;
  nodefl::Platform platform = nodefl::host::MakeHostPlatform();
  Fleet fleet(ram);
  fleet.graph = &graph;
  for (uint32_t v = 0; v < n; ++v) {
    auto d = std::make_unique<Device>();
    d->id = v;
    d->neighbours = Span<const uint32_t>(graph.neighbours.data() + graph.offsets[v], graph.degree(v));
    fleet.devices.push_back(std::move(d));
  }
  std::printf("%u devices, each working in a %zu-byte caller-provided arena\n\n", n, ram);

  // The "server's" public bin plan: vertices randomly numbered into k bins.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[host_rng.UniformBelow(i)]);
  std::vector<uint32_t> bin_of(n);
  for (uint32_t i = 0; i < n; ++i) bin_of[order[i]] = i % k;

  std::printf("[1] noisy neighbour counts per bin (FedWalk Alg. 2), k = floor(ln n) = %u bins\n", k);
  std::printf("  %-6s  %-17s  %10s  %10s  %14s  %8s\n", "mode", "noise", "mean|err|", "expected",
              "|deg err| mean", "eps/dev");
  std::vector<double> published[2];
  for (int m = 0; m < 2; ++m) {
    if (!SeedAll(fleet, *opt, platform, 1000000ull * (m + 1))) return 1;
    if (!RunBinning(fleet, kModes[m], opt->epsilon, bin_of, k, &published[m])) return 1;
  }

  std::printf("\n[2] exponential-mechanism encoding of the node id (FedWalk Eq. 9/12), %u draws/device\n",
              opt->encodings);
  std::printf("    score -min(||c_v - c_w||_1, C) on the published strict-mode vectors; sensitivity C\n");
  std::printf("  %-6s  %8s  %11s  %20s  %14s  %10s\n", "mode", "C", "true eps", "P(same label)",
              "uniform guess", "P(self)");
  for (int m = 0; m < 2; ++m) {
    if (!SeedAll(fleet, *opt, platform, 3000000ull * (m + 1))) return 1;
    if (!RunEncoding(fleet, kModes[m], opt->epsilon, published[0], k, opt->encodings)) return 1;
  }
  std::printf("    (paper mode uses exp(eps*u) as Eq. 12 prints it: its true guarantee is 2*eps*C, shown;\n"
              "     the ledger charges one release per device, as one walk visit would)\n");

  std::printf("\n[3] one-bit features to each neighbour (Lumos Eq. 26-27), workload = degree\n");
  std::printf("  %-6s  %10s  %13s  %15s  %9s  %9s  %9s  %9s\n", "mode", "eps/elem*", "eps/receiver",
              "eps all recv.", "bias", "rmse", "cos(agg)", "bytes/msg");
  for (int m = 0; m < 2; ++m) {
    if (!SeedAll(fleet, *opt, platform, 5000000ull * (m + 1))) return 1;
    if (!RunOneBit(fleet, kModes[m], opt->epsilon, features, dims)) return 1;
  }
  std::printf("    * largest over devices. bias/rmse per dim as all receivers together recover it\n"
              "      (unbiased: Theorem 3 in paper mode; strict releases m = max(1, floor(eps/2.5)) dims,\n"
              "      scaled by d/m, the rest read 0.5); cos(agg): cosine between noisy and exact\n"
              "      neighbourhood feature sums.\n");

  std::printf("\n[4] multi-bit encoding of the n x d feature matrix (GW-LDP Alg. 1), eps = %.3g total\n",
              opt->epsilon);
  std::printf("  %-7s  %10s  %13s  %14s  %22s\n", "", "sent cells", "eps/cell", "eps total",
              "mean |col-mean err|");
  if (!RunMultiBit(host_rng, opt->epsilon, features, n, dims)) return 1;
  std::printf("    (eps covers the whole matrix, so each sent cell gets eps/(m*n): more cells sent\n"
              "     means noisier cells; the recovery is unbiased, so only aggregates are useful)\n");

  std::printf("\n[5] privacy ledger: per-device total epsilon over phases 1-3 (sequential composition)\n");
  for (PrivacyMode mode : kModes) {
    std::vector<double> totals;
    for (auto& d : fleet.devices) {
      double t = 0;
      for (const auto& e : d->ledger.entries()) {
        if (e.mode == mode) t += e.epsilon;
      }
      totals.push_back(t);
    }
    std::printf("  %-6s  median %10.2f   max %10.2f\n", nodefl::PrivacyModeName(mode), Median(totals),
                *std::max_element(totals.begin(), totals.end()));
  }
  std::printf("\nlargest arena use of any device: %zu of %zu bytes (all SDK working memory)\n",
              fleet.arena.high_water_mark(), ram);
  return 0;
}
