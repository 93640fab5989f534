// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-histogram-bench: strict FedWalk's cluster-histogram design in one
// process, for epsilon sweeps without 10,000 TLS connections. Every vertex
// of a dataset makes its releases with the SDK's own device function
// (histogram_simulation.h); the server side is exactly what the job runs
// (histogram_plan.h: partitions, refinement; histogram_walks.h; SkipGram).
// Writes the embeddings; tests/bench/strict-fedwalk-sweep.sh scores them
// beside centralized DeepWalk.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/sim/hct_simulation.h"
#include "nodefl/server/fedwalk/histogram_walks/histogram_plan.h"
#include "nodefl/server/fedwalk/sim/histogram_simulation.h"
#include "nodefl/server/fedwalk/histogram_walks/histogram_walks.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/histogram_walks/tree_cut.h"
#include "nodefl/server/fedwalk/skipgram/walk_file.h"
#include "skipgram_cli.h"

namespace {

using namespace nodefl::server::fedwalk;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string graph;
  std::string output;
  std::string walks_out;
  std::string partition_tsv;
  HistogramPlanOptions plan;
  HistogramWalkOptions walks;
  SkipGramOptions skipgram;
  uint64_t seed = 1;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-histogram-bench --graph DIR [--output EMB] [options]\n"
               "Strict FedWalk by noised cluster histograms, simulated in process: every vertex\n"
               "releases h_v[c] = #neighbours in cluster c + exact discrete Laplace noise with\n"
               "the SDK's device code; the server refines the partition if asked, generates the\n"
               "walks from the releases and trains SkipGram. Prints the plan, the per-device\n"
               "epsilon, the walk statistics and the times.\n"
               "  --graph DIR          dataset in the shared TSV layout (edges.tsv)\n"
               "  --output EMB         write the embeddings (word2vec text); without it, no training\n"
               "  --walks-out FILE     also write the walks, one per line\n"
               "  --epsilon E          total epsilon per device over all its releases (default 8)\n"
               "  --partition P        random (one release against a random balanced partition,\n"
               "                       the default) or refined (a first release against a random\n"
               "                       partition, spectral clustering of it, a second release\n"
               "                       against the clusters: LDPGen's scheme) or tree (the strict\n"
               "                       HCT job's releases and tree, cut into clusters, then one\n"
               "                       release against them)\n"
               "  --clusters C         clusters of the (last) release; 0 = the default rule\n"
               "                       (histogram_plan.h) (default 0)\n"
               "  --first-clusters C   refined: clusters of the first, random release (0 = rule)\n"
               "  --first-share F      refined: share of epsilon spent on the first release\n"
               "                       (default 0.5)\n"
               "  --tree-epsilon E     tree: epsilon of the HCT job's two releases, half each,\n"
               "                       part of the total (default 2)\n"
               "  --partition-tsv FILE random: use this public partition instead ('vertex<TAB>cluster'\n"
               "                       lines, the first line of a vertex counts; a labels.tsv works,\n"
               "                       which gives an oracle community partition for what-if runs);\n"
               "                       vertices it does not list take no part\n"
               "  --rule R             walk rule: reciprocal (default) or direct\n"
               "  --min-count K        cells below K are treated as empty (default 1)\n"
               "  --gamma G            walks per vertex (default 80)\n"
               "  --length L           vertices per walk, the start included (default 40)\n"
               "  --seed S             seed of the partitions, the devices' noise, walks and training\n"
               "%s"
               "  --help               this text\n",
               cli::SkipGramFlagsHelp());
}

bool Parse(int argc, char** argv, Options* o) {
  namespace flags_ns = nodefl::host::cli;
  constexpr double kMaxReal = std::numeric_limits<double>::max();
  // "a number strictly between 0 and 1".
  const flags_ns::ValueFn share = [o](const std::string& v) {
    double d = 0;
    if (!flags_ns::ParseReal(v, &d) || d <= 0 || d >= 1) return std::string("a number strictly between 0 and 1");
    o->plan.first_share = d;
    return std::string();
  };
  flags_ns::FlagParser flags("nodefl-histogram-bench");
  flags.Shared(cli::SkipGramFlags(&o->skipgram))
      .Value("--graph", flags_ns::Text(&o->graph))
      .Value("--output", flags_ns::Text(&o->output))
      .Value("--partition-tsv", flags_ns::Text(&o->partition_tsv))
      .Value("--walks-out", flags_ns::Text(&o->walks_out))
      .Value("--epsilon", flags_ns::Real(&o->plan.total_epsilon, 0, true, kMaxReal))
      .Value("--partition", [o](const std::string& v) {
        const auto scheme = ParsePartitionScheme(v);
        if (!scheme) return std::string("random, refined or tree");
        o->plan.scheme = *scheme;
        return std::string();
      })
      .Value("--clusters", flags_ns::Whole(&o->plan.clusters, 0, 0xFFFF - 1))
      .Value("--first-clusters", flags_ns::Whole(&o->plan.first_clusters, 0, 0xFFFF - 1))
      .Value("--first-share", share)
      .Value("--tree-epsilon", flags_ns::Real(&o->plan.tree_epsilon, 0, true, kMaxReal))
      .Value("--rule", [o](const std::string& v) {
        const auto rule = ParseHistogramWalkRule(v);
        if (!rule) return std::string("reciprocal or direct");
        o->walks.rule = *rule;
        return std::string();
      })
      .Value("--min-count", flags_ns::Whole(&o->walks.min_count, 1, 1000000))
      .Value("--gamma", flags_ns::Whole(&o->walks.walks_per_vertex, 1, 1000000))
      .Value("--length", flags_ns::Whole(&o->walks.walk_length, 1, 1000000))
      .Value("--seed", flags_ns::Whole(&o->seed, 0, UINT64_MAX));
  const flags_ns::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == flags_ns::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == flags_ns::ParseOutcome::kError) return false;
  if (o->graph.empty()) {
    std::fprintf(stderr, "nodefl-histogram-bench: --graph is required (see --help)\n");
    return false;
  }
  if (const std::string problem = ValidateSkipGramOptions(o->skipgram); !problem.empty()) {
    std::fprintf(stderr, "nodefl-histogram-bench: %s\n", problem.c_str());
    return false;
  }
  o->walks.threads = o->skipgram.threads;
  o->walks.seed = o->seed;
  o->skipgram.seed = o->seed;
  return true;
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A public partition from 'vertex<TAB>cluster' lines; *clusters = largest
// cluster id + 1. std::nullopt and *error for a bad line or id.
std::optional<std::vector<uint16_t>> ReadPartitionTsv(const std::string& path, uint32_t n, uint32_t* clusters,
                                                      std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return std::nullopt;
  }
  std::vector<uint16_t> partition(n, nodefl::fedwalk::kAbsentCluster);
  std::string line;
  uint64_t number = 0;
  *clusters = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    uint64_t v = 0, c = 0;
    if (!(fields >> v >> c) || v >= n || c >= nodefl::fedwalk::kMaxClusters) {
      *error = path + ":" + std::to_string(number) + ": expected 'vertex<TAB>cluster' with vertex < " +
               std::to_string(n) + " and cluster < 65535";
      return std::nullopt;
    }
    if (partition[v] == nodefl::fedwalk::kAbsentCluster) partition[v] = static_cast<uint16_t>(c);
    *clusters = std::max<uint32_t>(*clusters, static_cast<uint32_t>(c) + 1);
  }
  return partition;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "nodefl-histogram-bench: %s\n", loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  const std::vector<std::vector<uint32_t>> neighbours = nodefl::dataset::NeighbourLists(g);
  std::vector<uint32_t> everyone(g.num_nodes);
  for (uint32_t v = 0; v < g.num_nodes; ++v) everyone[v] = v;
  std::string error;
  std::optional<std::vector<PlannedRelease>> plan = PlanReleases(o.plan, g.num_nodes, &error);
  if (!plan) {
    std::fprintf(stderr, "nodefl-histogram-bench: %s\n", error.c_str());
    return 2;
  }
  std::fprintf(stderr, "nodefl-histogram-bench: %s, %u nodes, %llu edges; %s partition, total epsilon %g in %zu "
               "release(s)\n",
               g.name.c_str(), g.num_nodes, static_cast<unsigned long long>(g.num_edges),
               PartitionSchemeName(o.plan.scheme), o.plan.total_epsilon, plan->size());

  // The releases, round by round: each round's partition is public before
  // the devices release against it (random, or refined from the previous
  // round's releases).
  auto t0 = Clock::now();
  double release_s = 0, refine_s = 0, device_epsilon = 0;
  std::optional<SimulatedRelease> last;
  for (size_t r = 0; r < plan->size(); ++r) {
    const PlannedRelease& p = (*plan)[r];
    t0 = Clock::now();
    std::vector<uint16_t> partition;
    if (r == 0 && o.plan.scheme == PartitionScheme::kTreeCut) {
      // The strict HCT job's releases (SDK device code) and tree, as the
      // HCT job builds it; its epsilon counts towards the device's total.
      nodefl::fedwalk::HctParameters hct;
      hct.mode = nodefl::PrivacyMode::kStrict;
      hct.epsilon_bins = hct.epsilon_upload = o.plan.tree_epsilon / 2;
      const SimulatedJob job = SimulateHctUploads(neighbours, hct, o.seed);
      HctPipelineOptions pipeline;
      pipeline.threads = o.skipgram.threads;
      pipeline.codebook.k = 1;  // the codebook is not used here
      if (!job.error.empty()) {
        std::fprintf(stderr, "nodefl-histogram-bench: HCT uploads: %s\n", job.error.c_str());
        return 1;
      }
      const HctPipelineResult tree = RunHctPipeline(job.transcript, job.leaves, pipeline);
      if (!tree.error.empty() || !tree.tree) {
        std::fprintf(stderr, "nodefl-histogram-bench: HCT: %s\n", tree.error.c_str());
        return 1;
      }
      device_epsilon += *std::max_element(job.device_epsilon.begin(), job.device_epsilon.end());
      partition = CutTreeIntoClusters(*tree.tree, g.num_nodes, p.clusters);
      refine_s += SecondsSince(t0);
      t0 = Clock::now();
    } else if (r == 0 && !o.partition_tsv.empty()) {
      uint32_t clusters = 0;
      auto given = ReadPartitionTsv(o.partition_tsv, g.num_nodes, &clusters, &error);
      if (!given) {
        std::fprintf(stderr, "nodefl-histogram-bench: %s\n", error.c_str());
        return 2;
      }
      partition = std::move(*given);
      (*plan)[0].clusters = clusters;
    } else if (r == 0) {
      partition = RandomClusterPartition(everyone, g.num_nodes, p.clusters, o.seed + r);
    } else {
      RefineOptions refine;
      refine.seed = o.seed + r;
      refine.threads = o.skipgram.threads;
      partition = RefinePartition(last->histograms, p.clusters, refine);
      refine_s += SecondsSince(t0);
      t0 = Clock::now();
    }
    last = SimulateHistogramRelease(neighbours, std::move(partition), p.clusters, p.epsilon, o.seed,
                                    static_cast<uint32_t>(r + 1), o.skipgram.threads);
    if (!last->error.empty()) {
      std::fprintf(stderr, "nodefl-histogram-bench: release %zu: %s\n", r + 1, last->error.c_str());
      return 1;
    }
    release_s += SecondsSince(t0);
    device_epsilon += last->epsilon_spent;
    uint64_t cells = 0;
    for (uint32_t v = 0; v < g.num_nodes; ++v) cells += last->histograms.row(v).size();
    std::fprintf(stderr, "  release %zu: %u clusters, epsilon %g (delivered %.7g), positive cells per device %.1f\n",
                 r + 1, p.clusters, p.epsilon, last->epsilon_spent,
                 static_cast<double>(cells) / std::max<uint32_t>(1, g.num_nodes));
  }

  t0 = Clock::now();
  HistogramWalkStats stats;
  cli::ProgressLine walk_line("walking", "walks");
  const std::optional<WalkCorpus> corpus =
      GenerateHistogramWalks(last->histograms, o.walks, std::ref(walk_line), &stats, &error);
  const double walk_s = SecondsSince(t0);
  if (!corpus) {
    std::fprintf(stderr, "nodefl-histogram-bench: %s\n", error.c_str());
    return 1;
  }
  // How many walk steps follow a real edge: what the releases let through
  // (the sim knows the graph; the server never does).
  uint64_t steps = 0, true_steps = 0;
  for (size_t i = 0; i < corpus->num_walks(); ++i) {
    const auto walk = corpus->Walk(i);
    for (size_t k = 1; k < walk.size(); ++k) {
      const auto& nb = neighbours[walk[k - 1]];
      ++steps;
      true_steps += std::binary_search(nb.begin(), nb.end(), walk[k]) ? 1 : 0;
    }
  }
  if (!o.walks_out.empty() && !SaveWalkFile(*corpus, o.walks_out, &error)) {
    std::fprintf(stderr, "nodefl-histogram-bench: %s\n", error.c_str());
    return 1;
  }
  double train_s = 0;
  if (!o.output.empty()) {
    t0 = Clock::now();
    cli::ProgressLine train_line("training", "tokens");
    o.skipgram.epochs = EpochsFor(*corpus, o.skipgram);
    const std::optional<SkipGramModel> model = Train(*corpus, o.skipgram, std::ref(train_line), &error);
    train_s = SecondsSince(t0);
    if (!model || !model->WriteWord2VecText(o.output, &error)) {
      std::fprintf(stderr, "nodefl-histogram-bench: %s\n", error.c_str());
      return 1;
    }
  }
  std::printf("dataset=%s nodes=%u partition=%s releases=%zu clusters=%u epsilon_total=%g device_epsilon=%.7g "
              "epsilon_per_edge_vs_server=%.7g rule=%s min_count=%u gamma=%u length=%u seed=%llu\n",
              g.name.c_str(), g.num_nodes, PartitionSchemeName(o.plan.scheme), plan->size(), plan->back().clusters,
              o.plan.total_epsilon, device_epsilon, 2 * device_epsilon, HistogramWalkRuleName(o.walks.rule),
              o.walks.min_count, o.walks.walks_per_vertex, o.walks.walk_length,
              static_cast<unsigned long long>(o.seed));
  std::printf("walks=%llu tokens=%llu dead_ends=%llu fallback_steps=%llu weighted_cells=%llu cluster_pairs=%llu "
              "true_edge_steps=%.4f release_s=%.2f refine_s=%.2f walk_s=%.2f train_s=%.2f\n",
              static_cast<unsigned long long>(stats.walks), static_cast<unsigned long long>(stats.tokens),
              static_cast<unsigned long long>(stats.dead_ends), static_cast<unsigned long long>(stats.fallback_steps),
              static_cast<unsigned long long>(stats.weighted_cells),
              static_cast<unsigned long long>(stats.cluster_pairs),
              steps ? static_cast<double>(true_steps) / static_cast<double>(steps) : 0.0, release_s, refine_s, walk_s,
              train_s);
  return 0;
}
