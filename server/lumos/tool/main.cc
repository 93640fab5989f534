// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-lumos-trim-reference: Lumos tree trimming (Lumos Sec. V-C) on a
// whole dataset in plaintext, for evaluation: greedy (Alg. 1), the paper's
// MCMC (Alg. 2) from greedy, the exact optimum (ceil of the maximum
// density), and the exact method simulated in the rounds docs/lumos.md
// designs for devices. Prints, per method, the maximum and mean workload, the
// secure comparisons it would need, moves, iterations and wall time, and the
// rounds' own counters.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/trimming/threshold.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace {

namespace lumos = nodefl::server::lumos;
constexpr const char* kTool = "nodefl-lumos-trim-reference";

struct Options {
  std::string graph;
  uint64_t iterations = 1000;
  uint64_t seed = 1;
  uint32_t search_depth = 0;
  bool skip_rounds = false;
  bool multi_accept = true;
  std::string output;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-lumos-trim-reference --graph DIR [options]\n"
               "Lumos tree trimming in plaintext (evaluation only): greedy initialisation\n"
               "(Alg. 1), the paper's MCMC (Alg. 2, Eq. 18, Alg. 3) from greedy, the exact\n"
               "min-max orientation (= ceil of the graph's maximum density), and the exact\n"
               "method simulated in the rounds designed for devices (docs/lumos.md).\n"
               "  --graph DIR            dataset in the shared TSV layout (edges.tsv)\n"
               "  --mcmc-iterations N    MCMC iterations (default: 1000; Lumos used 1,000 for\n"
               "                         Facebook and 300 for LastFM)\n"
               "  --seed S               seed of the MCMC chain, Alg. 3's tie choice, and the\n"
               "                         rounds' offers and arrival orders (default 1)\n"
               "  --search-depth D       longest path, in edges, a search round follows in the\n"
               "                         rounds method (default: 0 = unbounded)\n"
               "  --single-accept        threshold method: a device below the threshold accepts\n"
               "                         only the first search that reaches it in a step (the\n"
               "                         default, like the devices, accepts while it stays below)\n"
               "  --skip-rounds          do not run the rounds method (slow on dense graphs:\n"
               "                         minutes on Facebook); its column is then empty\n"
               "  --output TSV           write per-vertex workloads: vertex, greedy, mcmc, exact,\n"
               "                         rounds, threshold\n"
               "  --help                 this text\n"
               "Comparisons are those each method would need if every comparison were a\n"
               "secure two-party comparison (greedy: one per edge; MCMC: two runs of Alg. 3\n"
               "and one per Eq. 18 decision per iteration; exact: 2|V|-1 per workload level\n"
               "and one per vertex a search reaches; rounds: one per kept edge per local round\n"
               "and one per vertex a search reaches; threshold: none, devices compare their\n"
               "own workload with a public threshold, docs/lumos.md).\n");
}

bool Parse(int argc, char** argv, Options* o) {
  namespace cli = nodefl::host::cli;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&o->graph))
      .Value("--mcmc-iterations", cli::Whole(&o->iterations, 0, 1'000'000'000))
      .Value("--seed", cli::Whole(&o->seed, 0, UINT64_MAX))
      .Value("--search-depth", cli::Whole(&o->search_depth, 0, UINT32_MAX))
      .Switch("--skip-rounds", [o] { o->skip_rounds = true; })
      .Switch("--single-accept", [o] { o->multi_accept = false; })
      .Value("--output", cli::Text(&o->output));
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  if (!cli::RequireDirectory(kTool, "--graph", o->graph)) return false;
  return true;
}

void McmcProgress(void*, uint64_t iteration, uint32_t max_workload) {
  std::fprintf(stderr, "%s: mcmc iteration %" PRIu64 ", max workload %u\n", kTool, iteration, max_workload);
}

void ExactProgress(void*, uint32_t max_workload, uint64_t reversals) {
  std::fprintf(stderr, "%s: exact at level %u after %" PRIu64 " reversals\n", kTool, max_workload, reversals);
}

void PrintRow(const char* name, const lumos::Trimming& t, const lumos::MethodStats& s) {
  std::printf("%-7s %8u %10.3f %14" PRIu64 " %10" PRIu64 " %11" PRIu64 " %11" PRIu64 " %10.3f\n", name,
              t.max_workload(), t.mean_workload(), s.comparisons, s.moves, s.iterations, t.edges_kept_twice(),
              s.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "%s: %s\n", kTool, loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& dg = loaded.graph;
  const lumos::TrimGraph g(dg.num_nodes, nodefl::dataset::UndirectedEdges(dg));
  if (!g.valid()) {
    std::fprintf(stderr, "%s: %s: %s\n", kTool, o.graph.c_str(), g.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: %s, %u vertices, %" PRIu64 " edges, %" PRIu64 " MCMC iterations, seed %" PRIu64 "\n", kTool,
               dg.name.c_str(), g.num_vertices(), g.num_edges(), o.iterations, o.seed);

  lumos::MethodStats greedy_stats, exact_stats, rounds_row;
  lumos::McmcStats mcmc_stats;
  const lumos::Trimming greedy = lumos::Greedy(g, &greedy_stats);
  lumos::McmcOptions mcmc_options;
  mcmc_options.iterations = o.iterations;
  mcmc_options.seed = o.seed;
  mcmc_options.progress_every = 100;
  mcmc_options.progress = McmcProgress;
  const lumos::Trimming mcmc = lumos::Mcmc(greedy, mcmc_options, &mcmc_stats);
  lumos::ExactOptions exact_options;
  exact_options.progress = ExactProgress;
  const lumos::Trimming exact = lumos::Exact(greedy, exact_options, &exact_stats);
  lumos::RoundsStats rounds_stats;
  lumos::Trimming rounds = greedy;
  if (!o.skip_rounds) rounds = lumos::Rounds(greedy, {.search_depth = o.search_depth, .seed = o.seed}, &rounds_stats);
  rounds_row.comparisons = rounds_stats.local_comparisons + rounds_stats.search_comparisons;
  rounds_row.moves = rounds_stats.transfers + rounds_stats.search_reversals;
  rounds_row.iterations = rounds_stats.local_rounds + rounds_stats.search_rounds;
  rounds_row.seconds = rounds_stats.seconds;
  lumos::ThresholdStats threshold_stats;
  const lumos::Trimming threshold = lumos::Threshold(
      greedy,
      {.seed = o.seed,
       .known_infeasible = lumos::KnownInfeasible(g.num_edges(), g.num_vertices()),
       .multi_accept = o.multi_accept},
      &threshold_stats);
  lumos::MethodStats threshold_row;
  threshold_row.moves = threshold_stats.reversals;
  threshold_row.iterations = threshold_stats.rounds.size();
  threshold_row.seconds = threshold_stats.seconds;
  for (const lumos::Trimming* t : {&greedy, &mcmc, &exact, static_cast<const lumos::Trimming*>(&rounds), &threshold}) {
    const bool once = t == &exact || (t == &rounds && !o.skip_rounds) || t == &threshold;
    const std::string bad = t->CheckInvariant(once);
    if (!bad.empty()) {
      std::fprintf(stderr, "%s: internal error: %s\n", kTool, bad.c_str());
      return 1;
    }
  }
  if (threshold.max_workload() != exact.max_workload()) {
    std::fprintf(stderr, "%s: internal error: threshold method ended at %u, the optimum is %u\n", kTool,
                 threshold.max_workload(), exact.max_workload());
    return 1;
  }

  std::printf("dataset %s: %u vertices, %" PRIu64 " edges\n", dg.name.c_str(), g.num_vertices(), g.num_edges());
  std::printf("%-7s %8s %10s %14s %10s %11s %11s %10s\n", "method", "max_wl", "mean_wl", "comparisons", "moves",
              "iterations", "kept_twice", "seconds");
  PrintRow("greedy", greedy, greedy_stats);
  PrintRow("mcmc", mcmc, mcmc_stats);
  PrintRow("exact", exact, exact_stats);
  if (!o.skip_rounds) PrintRow("rounds", rounds, rounds_row);
  PrintRow("threshold", threshold, threshold_row);
  std::printf("mcmc (paper mode): %" PRIu64 " of %" PRIu64 " proposals accepted, %" PRIu64 " iterations skipped\n",
              mcmc_stats.moves, mcmc_stats.iterations - mcmc_stats.skipped, mcmc_stats.skipped);
  for (const auto& [delta, a] : mcmc_stats.by_delta) {
    std::printf("  delta %+" PRId64 ": %" PRIu64 " proposed, %" PRIu64 " accepted\n", delta, a.proposed, a.accepted);
  }
  std::printf("exact = ceil(max density) = %u\n", exact.max_workload());
  if (!o.skip_rounds) {
    std::printf("rounds (search depth %s): %" PRIu64 " local rounds, %" PRIu64 " search rounds; comparisons %" PRIu64
                " local + %" PRIu64 " search; %" PRIu64 " offers, %" PRIu64 " transfers, %" PRIu64
                " paths reversed by searches, longest %" PRIu64 " edges\n",
                o.search_depth ? std::to_string(o.search_depth).c_str() : "unbounded", rounds_stats.local_rounds,
                rounds_stats.search_rounds, rounds_stats.local_comparisons, rounds_stats.search_comparisons,
                rounds_stats.offers, rounds_stats.transfers, rounds_stats.search_reversals,
                rounds_stats.longest_search_path);
    std::printf("rounds max workload by round:");
    for (size_t r = 0; r < rounds_stats.max_by_round.size(); ++r) {
      std::printf(" %u%s", rounds_stats.max_by_round[r], r > 0 && rounds_stats.search_round[r - 1] ? "s" : "");
    }
    std::printf("  (first: after the tie drop; s: search round)\n");
  }
  uint64_t threshold_longest = 0;
  uint32_t threshold_depth = 0;
  for (const lumos::ThresholdRound& r : threshold_stats.rounds) {
    threshold_longest = std::max<uint64_t>(threshold_longest, r.longest_path);
    threshold_depth = std::max(threshold_depth, r.depth);
  }
  std::printf("threshold: %zu drains, %zu rounds, %" PRIu64 " messages (searches and echoes), %" PRIu64
              " reversed paths, longest %" PRIu64 " edges, deepest search %u hops\n",
              threshold_stats.thresholds.size(), threshold_stats.rounds.size(), threshold_stats.messages,
              threshold_stats.reversals, threshold_longest, threshold_depth);
  std::printf("threshold drains:");
  {
    size_t i = 0;
    for (uint32_t T : threshold_stats.thresholds) {
      uint32_t n = 0;
      while (i < threshold_stats.rounds.size() && threshold_stats.rounds[i].threshold == T) {
        ++n;
        ++i;
        if (!threshold_stats.rounds[i - 1].still_over) break;
      }
      std::printf(" T=%u:%u%s", T, n, threshold_stats.rounds[i - 1].still_over ? "(stuck)" : "");
    }
  }
  std::printf("  (threshold:rounds)\n");

  if (!o.output.empty()) {
    std::ofstream out(o.output);
    out << "vertex\tgreedy\tmcmc\texact\trounds\tthreshold\n";
    for (uint32_t v = 0; v < g.num_vertices(); ++v) {
      out << v << '\t' << greedy.workload(v) << '\t' << mcmc.workload(v) << '\t' << exact.workload(v) << '\t'
          << (o.skip_rounds ? std::string() : std::to_string(rounds.workload(v))) << '\t' << threshold.workload(v)
          << '\n';
    }
    out.close();
    if (!out) {
      std::fprintf(stderr, "%s: could not write %s\n", kTool, o.output.c_str());
      return 1;
    }
  }
  return 0;
}
