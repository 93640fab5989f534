// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-dtw-bench: times the naive DTW (DtwL1Reference) against the fast one
// (DtwL1) on ordered degree matrices built from a real graph the way
// paper-mode devices build them, checks that they agree, and optionally
// times the whole all-pairs pass (ComputeDissimilarities).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "device_degree_matrices.h"
#include "dtw_reference.h"
#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/dissimilarity/dissimilarity.h"
#include "nodefl/server/fedwalk/dissimilarity/dtw.h"
#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace {

using nodefl::server::fedwalk::ComputeDissimilarities;
using nodefl::server::fedwalk::DissimilarityWorkCells;
using nodefl::server::fedwalk::DtwL1;
using nodefl::server::fedwalk::DtwL1Reference;
using nodefl::server::fedwalk::DtwRelativeTolerance;
using nodefl::server::fedwalk::DtwWorkspace;
using nodefl::server::fedwalk::FeatureStore;
using nodefl::server::fedwalk::bench::BuildDeviceDegreeMatrices;
using nodefl::server::fedwalk::bench::DegreeMatrices;
using Clock = std::chrono::steady_clock;

// Each timed pass is repeated until it has used this much CPU, so that short
// passes still give stable rates.
constexpr double kMinTimedSeconds = 0.3;

// CPU time of the calling thread: the single-thread comparison stays
// meaningful on a machine shared with other jobs (wall time would charge
// us for their time slices).
double ThreadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Options {
  std::string graph;
  uint32_t bins = 0;  // 0: floor(ln n)
  double epsilon = 2.0;
  uint64_t pairs = 2000;
  uint64_t seed = 1;
  unsigned threads = 0;  // 0: hardware concurrency
  bool all_pairs = false;
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: nodefl-dtw-bench --graph DIR [options]\n"
               "Times naive vs fast DTW (FedWalk Eq. 6-7) on ordered degree matrices built\n"
               "from DIR (shared TSV layout: edges.tsv) the way paper-mode devices build them.\n"
               "  --graph DIR     dataset folder (required)\n"
               "  --bins K        bins k, 1..16 (default floor(ln n), at least 1)\n"
               "  --epsilon E     Laplace(1/E) noise on degree vectors (default 2)\n"
               "  --pairs N       random vertex pairs timed with both versions, >= 1 (default 2000)\n"
               "  --seed S        seed of bin plan, noise and pair sampling (default 1)\n"
               "  --threads T     threads for --all-pairs (default: all cores)\n"
               "  --all-pairs     also time the full all-pairs pass with the fast version\n"
               "  --help          this text\n");
}

std::optional<Options> Parse(int argc, char** argv, bool& help) {
  namespace cli = nodefl::host::cli;
  Options o;
  cli::FlagParser flags("nodefl-dtw-bench");
  flags.Value("--graph", cli::Text(&o.graph))
      .Value("--bins", cli::Whole(&o.bins, 1, nodefl::fedwalk::kMaxBins))
      .Value("--epsilon", cli::Real(&o.epsilon, 0, true, std::numeric_limits<double>::max()))
      .Value("--pairs", cli::Whole(&o.pairs, 1, uint64_t{1} << 32))
      .Value("--seed", cli::Whole(&o.seed, 0, UINT64_MAX))
      .Value("--threads", cli::Whole(&o.threads, 0, 1024))
      .Switch("--all-pairs", [&o] { o.all_pairs = true; });
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  help = outcome == cli::ParseOutcome::kHelp;
  if (outcome != cli::ParseOutcome::kOk) return std::nullopt;
  if (o.graph.empty()) {
    std::fprintf(stderr, "nodefl-dtw-bench: --graph is required (see --help)\n");
    return std::nullopt;
  }
  return o;
}

// Runs `pass` until it has used kMinTimedSeconds of thread CPU time; CPU
// seconds per pass.
template <typename Pass>
std::pair<double, int> TimePerPass(Pass&& pass) {
  int repetitions = 0;
  const double start = ThreadSeconds();
  double elapsed = 0;
  do {
    pass();
    ++repetitions;
    elapsed = ThreadSeconds() - start;
  } while (elapsed < kMinTimedSeconds);
  return {elapsed / repetitions, repetitions};
}

void PrintRate(const char* name, double seconds, int repetitions, double cells) {
  std::printf("  %-10s %12.6f %9d %14.3e %10.3f\n", name, seconds, repetitions, cells / seconds,
              1e9 * seconds / cells);
}

}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  const std::optional<Options> parsed = Parse(argc, argv, help);
  if (help) {
    Usage(stdout);
    return 0;
  }
  if (!parsed) return 2;
  Options opt = *parsed;

  nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(opt.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "nodefl-dtw-bench: %s\n", loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& graph = loaded.graph;
  if (graph.num_nodes < 2) {
    std::fprintf(stderr, "nodefl-dtw-bench: the graph needs at least 2 vertices\n");
    return 1;
  }
  if (opt.bins == 0) {
    const double ln = std::floor(std::log(static_cast<double>(graph.num_nodes)));
    opt.bins = static_cast<uint32_t>(std::clamp(ln, 1.0, 16.0));
  }

  const DegreeMatrices matrices = BuildDeviceDegreeMatrices(graph, opt.bins, opt.epsilon, opt.seed);
  FeatureStore store = FeatureStore::OrderedMatrices(opt.bins).value();
  store.Reserve(graph.num_nodes, matrices.values.size() / opt.bins);
  for (uint32_t v = 0; v < graph.num_nodes; ++v) {
    const std::span<const float> rows(matrices.matrix(v), size_t{matrices.rows[v]} * opt.bins);
    if (!store.AddOrderedMatrix(rows, matrices.rows[v]).ok()) {
      std::fprintf(stderr, "nodefl-dtw-bench: feature store refused vertex %u\n", v);
      return 1;
    }
  }
  uint32_t max_rows = 0;
  for (const uint32_t r : matrices.rows) max_rows = std::max(max_rows, r);

  std::printf("graph        %s: %u vertices, %llu edges, max degree %u\n", graph.name.c_str(), graph.num_nodes,
              static_cast<unsigned long long>(graph.num_edges), max_rows);
  std::printf("features     k = %u bins, epsilon %.3g, %llu rows, store %.1f MB\n", opt.bins, opt.epsilon,
              static_cast<unsigned long long>(store.total_rows()), store.bytes() / 1e6);

  // Random pairs, each vertex pair equally likely.
  std::mt19937_64 rng(opt.seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<uint32_t> first(0, graph.num_nodes - 1);
  std::uniform_int_distribution<uint32_t> second(0, graph.num_nodes - 2);
  std::vector<std::pair<uint32_t, uint32_t>> pairs(opt.pairs);
  double cells = 0;
  for (auto& [u, v] : pairs) {
    u = first(rng);
    v = second(rng);
    if (v >= u) ++v;
    cells += static_cast<double>(matrices.rows[u]) * matrices.rows[v];
  }
  std::printf("pairs        %llu random pairs, %.4g DP cells (single thread)\n\n",
              static_cast<unsigned long long>(opt.pairs), cells);
  if (cells == 0) {
    std::fprintf(stderr, "nodefl-dtw-bench: the sampled pairs have no DP cells (isolated vertices)\n");
    return 1;
  }

  std::vector<double> reference(pairs.size());
  std::vector<double> fast(pairs.size());
  const auto [ref_seconds, ref_reps] = TimePerPass([&] {
    for (size_t p = 0; p < pairs.size(); ++p) {
      const auto [u, v] = pairs[p];
      reference[p] = DtwL1Reference(matrices.matrix(u), matrices.rows[u], matrices.matrix(v), matrices.rows[v],
                                    opt.bins);
    }
  });
  DtwWorkspace workspace;
  const auto [fast_seconds, fast_reps] = TimePerPass([&] {
    for (size_t p = 0; p < pairs.size(); ++p) {
      fast[p] = DtwL1(store.matrix(pairs[p].first), store.matrix(pairs[p].second), workspace);
    }
  });

  double worst = 0;
  for (size_t p = 0; p < pairs.size(); ++p) {
    const double diff = std::fabs(fast[p] - reference[p]);
    worst = std::max(worst, reference[p] == 0 ? (diff == 0 ? 0.0 : INFINITY) : diff / reference[p]);
  }
  const double bound = DtwRelativeTolerance(opt.bins);

  std::printf("  %-10s %12s %9s %14s %10s   (thread CPU time)\n", "dtw", "s/pass", "passes", "cells/s",
              "ns/cell");
  PrintRate("reference", ref_seconds, ref_reps, cells);
  PrintRate("fast", fast_seconds, fast_reps, cells);
  std::printf("  speed-up   %.1fx\n", ref_seconds / fast_seconds);
  std::printf("  agreement  max relative difference %.3e (bound %.3e): %s\n\n", worst, bound,
              worst <= bound ? "ok" : "MISMATCH");

  const uint64_t total_cells = DissimilarityWorkCells(store);
  const unsigned threads = opt.threads != 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  const double pairs_total = 0.5 * graph.num_nodes * (graph.num_nodes - 1.0);
  // Random pairs are a uniform sample of all pairs, so their rate predicts
  // the all-pairs pass (perfect scaling assumed for the multi-thread line).
  const double single_thread_estimate = static_cast<double>(total_cells) / (cells / fast_seconds);
  std::printf("all pairs    %.0f pairs, %.4g DP cells, condensed matrix %.1f MB\n", pairs_total,
              static_cast<double>(total_cells), pairs_total * sizeof(float) / 1e6);
  std::printf("  estimate   %.1f s on 1 thread, %.1f s on %u threads (from the fast rate above)\n",
              single_thread_estimate, single_thread_estimate / threads, threads);

  bool all_pairs_ok = true;
  if (opt.all_pairs) {
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    const auto matrix = ComputeDissimilarities(store, threads);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    // The matrix holds floats: allow one more rounding than DtwL1's bound.
    double matrix_worst = 0;
    for (size_t p = 0; p < pairs.size(); ++p) {
      const double diff = std::fabs(matrix.at(pairs[p].first, pairs[p].second) - reference[p]);
      matrix_worst = std::max(matrix_worst, reference[p] == 0 ? diff : diff / reference[p]);
    }
    all_pairs_ok = matrix_worst <= bound + 1.0 / 16777216.0;
    std::printf("  measured   %.3f s wall, %.3f s CPU on %u threads: %.3e cells/s wall\n", seconds, cpu_seconds,
                threads, static_cast<double>(total_cells) / seconds);
    std::printf("  matrix     %zu bytes; sampled pairs vs reference: max relative difference %.3e: %s\n",
                matrix.bytes(), matrix_worst, all_pairs_ok ? "ok" : "MISMATCH");
  }
  return worst <= bound && all_pairs_ok ? 0 : 1;
}
