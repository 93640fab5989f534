// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-lumos-trim-fleet: the lumos-trim job on a whole dataset in one
// process, without TLS (lumos_trim_fleet.h): the server's LumosTrimJob and
// one LumosTrimRole per vertex, over a fake network that delivers in a
// random order. For graphs larger than one machine can hold as TLS
// connections (each connection is an open file in the server and in the
// emulator), and to measure the trimming's messages and steps apart from
// the network. The greedy start is Lumos Alg. 1 computed in plaintext (the
// secure comparisons are the secure-compare job's, measured over TLS).
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "lumos_trim_fleet.h"
#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace {

namespace fleet = nodefl::lumos::fleet;
constexpr const char* kTool = "nodefl-lumos-trim-fleet";

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-lumos-trim-fleet --graph DIR [options]\n"
               "Runs the lumos-trim job (drains to public thresholds, docs/lumos.md) on every vertex\n"
               "of a dataset in one process, without TLS: the real device role and server job over a\n"
               "random-order in-memory network, with every edge's coverage checked after every\n"
               "delivery. Starts from Lumos Alg. 1 computed in plaintext.\n"
               "  --graph DIR      dataset in the shared TSV layout (edges.tsv)\n"
               "  --seed S         delivery order and aborted comparisons (default 1)\n"
               "  --strict         devices keep their lists (the server checks only their counts)\n"
               "  --aborted F      fraction of comparisons that aborted on one side (default 0)\n"
               "  --help           this text\n"
               "Exit status: 0 when the job reached the plaintext optimum with every edge covered,\n"
               "1 otherwise, 2 for bad arguments.\n");
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = nodefl::host::cli;
  std::string graph_dir;
  uint64_t seed = 1;
  bool strict = false;
  double aborted = 0;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&graph_dir))
      .Value("--seed", cli::Whole(&seed, 0, UINT64_MAX))
      .Switch("--strict", [&strict] { strict = true; })
      .Value("--aborted", cli::Real(&aborted, 0.0, false, 1.0));
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    return 0;
  }
  if (outcome == cli::ParseOutcome::kError) return 2;
  if (graph_dir.empty() || !std::filesystem::is_directory(graph_dir)) {
    std::fprintf(stderr, "%s: --graph DIR is required and must be a directory (see --help)\n", kTool);
    return 2;
  }
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(graph_dir);
  if (!loaded.ok) {
    std::fprintf(stderr, "%s: %s\n", kTool, loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& dg = loaded.graph;
  const fleet::Graph g = fleet::MakeGraph(dg.num_nodes, nodefl::dataset::UndirectedEdges(dg));
  namespace ref = nodefl::server::lumos;
  const uint32_t optimum = ref::Exact(ref::Greedy(ref::TrimGraph(g.n, g.edges))).max_workload();
  std::fprintf(stderr, "%s: %s, %u devices, %zu edges, optimum %u; building the fleet\n", kTool, dg.name.c_str(), g.n,
               g.edges.size(), optimum);
  const auto start = std::chrono::steady_clock::now();
  fleet::Fleet f(g, {.seed = seed, .aborted = aborted, .upload_kept = !strict});
  const bool finished = f.Run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nodefl::server::jobs::LumosTrimSummary& s = f.job().summary();
  std::string thresholds;
  for (uint32_t t : s.thresholds) thresholds += (thresholds.empty() ? "" : ",") + std::to_string(t);
  std::printf("dataset %s: %u devices, %zu edges\n", dg.name.c_str(), g.n, g.edges.size());
  std::printf("greedy max %u (after the tie drop %u), mean %.3f\n", s.greedy_max, s.start_max, s.greedy_mean);
  std::printf("trimmed max %u, mean %.3f; plaintext optimum %u; job certified %s\n", s.max_workload, s.mean_workload,
              optimum, s.certified ? "yes" : "no");
  std::printf("steps %zu, drains %zu (thresholds %s), relayed messages %" PRIu64 " (%" PRIu64
              " sealed bytes), coverage checks %" PRIu64 ", uncovered edges %" PRIu64 ", kept twice %" PRIu64 "\n",
              s.steps.size(), s.thresholds.size(), thresholds.c_str(), f.relayed(),
              f.relayed() * nodefl::server::jobs::LumosTrimJob::kSealedMessageBytes, f.coverage_checks(),
              f.Uncovered(), f.KeptTwice());
  std::printf("wall time %.1f s (one process, no network)\n", seconds);
  std::printf("step threshold devices outcomes roots relief still_over deadline\n");
  for (const auto& st : s.steps) {
    std::printf("%4u %9u %7u %8u %5u %6llu %10d %8d\n", st.step, st.threshold, st.devices, st.outcomes, st.roots,
                static_cast<unsigned long long>(st.relief), st.still_over ? 1 : 0, st.deadline ? 1 : 0);
  }
  std::printf("absent devices %zu\n", s.absent.size());
  for (const std::string& e : f.errors()) std::printf("error: %s\n", e.c_str());
  const bool ok = finished && f.errors().empty() && f.Uncovered() == 0 && s.max_workload == optimum &&
                  f.job().succeeded() == (aborted == 0);
  std::printf("result: %s\n", ok ? "VERIFIED: optimum reached, every edge covered at every delivery"
                                 : "NOT VERIFIED");
  return ok ? 0 : 1;
}
