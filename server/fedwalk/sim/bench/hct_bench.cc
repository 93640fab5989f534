// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-hct-bench: builds the FedWalk HCT and codebook for a dataset in one
// process (device uploads simulated with the SDK's device code, then the
// server pipeline the job runs) and prints time, memory and what the
// neighbour-recovery attack gets from the uploads. One mode per run, so the
// peak memory printed is that mode's; tests/bench/hct-bench.sh runs both
// modes and the DTW comparison side by side.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/sim/hct_simulation.h"
#include "nodefl/server/fedwalk/attack/neighbour_recovery.h"

namespace {

using namespace nodefl::server::fedwalk;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string graph;
  nodefl::PrivacyMode mode = nodefl::PrivacyMode::kStrict;
  unsigned threads = 0;
  uint32_t bins = 0;
  uint32_t codebook_k = 256;
  double epsilon = 2.0;
  uint64_t seed = 1;
  bool attack = true;
  bool scaled_encoder = false;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-hct-bench --graph DIR [options]\n"
               "Builds the FedWalk HCT and Eq. 12 codebook for every node of a dataset in one\n"
               "process and prints timings, memory and the neighbour-recovery attack's score.\n"
               "  --graph DIR        dataset in the shared TSV layout (edges.tsv)\n"
               "  --mode M           strict (default) or paper\n"
               "  --threads N        compute threads (default: hardware threads)\n"
               "  --bins K           bins (default floor(ln n), at most 16)\n"
               "  --codebook-k K     most codebook entries per vertex (default 256)\n"
               "  --epsilon E        epsilon of every mechanism (default 2)\n"
               "  --seed S           seed of the bin plan and the simulated devices (default 1)\n"
               "  --encoder E        raw (default: the paper's Eq. 12 score) or scaled (score / 2du,\n"
               "                     epsilon per encoding; the strict job's default)\n"
               "  --no-attack        skip the neighbour-recovery attack\n"
               "  --help             this text\n");
}

bool Parse(int argc, char** argv, Options* o) {
  namespace cli = nodefl::host::cli;
  cli::FlagParser flags("nodefl-hct-bench");
  flags.Value("--graph", cli::Text(&o->graph))
      .Value("--mode", cli::OneOf({"strict", "paper"},
                                  [o](const std::string& v) {
                                    o->mode = v == "paper" ? nodefl::PrivacyMode::kPaper : nodefl::PrivacyMode::kStrict;
                                  }))
      .Value("--threads", cli::Whole(&o->threads, 0, 1024))
      .Value("--bins", cli::Whole(&o->bins, 0, nodefl::fedwalk::kMaxBins))
      .Value("--codebook-k", cli::Whole(&o->codebook_k, 1, nodefl::fedwalk::kMaxCodebookK))
      .Value("--seed", cli::Whole(&o->seed, 0, UINT64_MAX))
      .Value("--encoder", cli::OneOf({"raw", "scaled"}, [o](const std::string& v) { o->scaled_encoder = v == "scaled"; }))
      .Value("--epsilon", cli::Real(&o->epsilon, 0, true, std::numeric_limits<double>::max()))
      .Switch("--no-attack", [o] { o->attack = false; });
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  if (o->graph.empty()) {
    std::fprintf(stderr, "nodefl-hct-bench: --graph is required (see --help)\n");
    return false;
  }
  return true;
}

uint64_t PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss);  // KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "nodefl-hct-bench: %s\n", loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  const std::vector<std::vector<uint32_t>> neighbours = nodefl::dataset::NeighbourLists(g);
  const char* mode = o.mode == nodefl::PrivacyMode::kPaper ? "paper" : "strict";
  std::fprintf(stderr, "nodefl-hct-bench: %s, %u nodes, %llu edges, mode %s, %u threads\n", g.name.c_str(),
               g.num_nodes, static_cast<unsigned long long>(g.num_edges), mode, o.threads);

  nodefl::fedwalk::HctParameters params;
  params.mode = o.mode;
  params.bins = static_cast<uint8_t>(o.bins);
  params.epsilon_bins = params.epsilon_upload = params.epsilon_walk = o.epsilon;
  params.codebook_k = static_cast<uint16_t>(o.codebook_k);
  auto t0 = Clock::now();
  SimulatedJob job = SimulateHctUploads(neighbours, params, o.seed);
  const double simulate_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!job.error.empty()) {
    std::fprintf(stderr, "nodefl-hct-bench: %s\n", job.error.c_str());
    return 1;
  }

  HctPipelineOptions options;
  options.threads = o.threads;
  options.codebook.epsilon = o.epsilon;
  options.codebook.k = o.codebook_k;
  options.scaled_encoder = o.scaled_encoder;
  HctPipelineProgress progress;
  std::atomic<bool> running{true};
  std::thread reporter([&] {
    static const char* kStages[] = {"dissimilarities", "clustering", "codebook", "done"};
    auto last = Clock::now();
    while (running.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Clock::now() - last < std::chrono::seconds(5)) continue;
      last = Clock::now();
      const uint64_t total = progress.total_pairs.load();
      std::fprintf(stderr, "  %s", kStages[progress.stage.load()]);
      if (progress.stage.load() == 0 && total > 0) {
        std::fprintf(stderr, " %.1f%% of %llu pairs", 100.0 * static_cast<double>(progress.done_pairs.load()) /
                                                          static_cast<double>(total),
                     static_cast<unsigned long long>(total));
      }
      std::fprintf(stderr, "\n");
    }
  });
  t0 = Clock::now();
  HctPipelineResult r = RunHctPipeline(job.transcript, job.leaves, options, &progress);
  const double pipeline_s = std::chrono::duration<double>(Clock::now() - t0).count();
  running.store(false);
  reporter.join();
  if (!r.error.empty()) {
    std::fprintf(stderr, "nodefl-hct-bench: %s\n", r.error.c_str());
    return 1;
  }

  std::printf("dataset=%s nodes=%u edges=%llu mode=%s bins=%u threads=%u\n", g.name.c_str(), g.num_nodes,
              static_cast<unsigned long long>(g.num_edges), mode, job.transcript.bins, o.threads);
  std::printf("simulate_devices_s=%.2f dissimilarity_s=%.2f clustering_s=%.2f codebook_s=%.2f hct_build_s=%.2f\n",
              simulate_s, r.seconds_dissimilarity, r.seconds_clustering, r.seconds_codebook, pipeline_s);
  std::printf("work_cells=%llu cells_per_s=%.3g feature_bytes=%llu dissimilarity_bytes=%llu peak_rss_kib=%llu\n",
              static_cast<unsigned long long>(r.work_cells),
              static_cast<double>(r.work_cells) / std::max(r.seconds_dissimilarity, 1e-9),
              static_cast<unsigned long long>(r.feature_bytes),
              static_cast<unsigned long long>(r.dissimilarity_bytes),
              static_cast<unsigned long long>(PeakRssKiB()));
  std::printf("tree_bytes=%zu codebook_bytes=%zu codebook_k=%u max_truncated_mass=%.3g\n",
              r.tree->Serialize().size(), r.codebook->Serialize().size(), o.codebook_k,
              r.codebook->max_truncated_mass());
  if (o.attack) {
    std::vector<std::vector<uint32_t>> truth = neighbours;
    const NeighbourGuesses guesses = o.mode == nodefl::PrivacyMode::kPaper
                                         ? RecoverFromOrderedMatrices(job.transcript)
                                         : RecoverFromHistograms(job.transcript);
    const RecoveryScore s = ScoreGuesses(guesses, job.transcript, truth);
    const RecoveryScore prior = ScoreGuesses(RecoverByDegreePrior(job.transcript), job.transcript, truth);
    std::printf("attack_precision=%.4f attack_recall=%.4f degree_prior_precision=%.4f degree_prior_recall=%.4f "
                "uniform_chance_precision=%.4f\n",
                s.precision, s.recall, prior.precision, prior.recall, s.chance_precision);
  }
  return 0;
}
