// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-kcagc-sim: kCAGC ("Attributed Graph Clustering in Collaborative
// Settings") on a dataset in the shared layout, participants and server in
// one process, every secure sum through the fixed-point simulation of the
// secure-aggregation service (bit-identical to the real one's sums). The
// dataset's feature columns are split among L participants (a seeded random
// permutation cut into L near-equal chunks); each holds the whole graph.
// Prints accuracy, NMI and macro-F1 against labels.tsv, the number of
// intersections, the secure sums (summed scalars) beside our formula and the
// paper's count, the aggregation rounds and the bytes they would carry, and
// the wall time (joint mode: the subspace iteration's steps and the singular
// values the server learns); progress goes to stderr. docs/kcagc.md has the measured
// tables and the commands.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/metrics.h"
#include "nodefl/server/kcagc/sim/features.h"
#include "nodefl/server/kcagc/sim/runs.h"

namespace {

namespace kc = nodefl::server::kcagc;
constexpr const char* kTool = "nodefl-kcagc-sim";

struct Options {
  std::string graph;
  kc::Mode mode = kc::Mode::kKcagc;
  uint32_t participants = 2;
  uint32_t clusters = 0;           // 0: the classes
  uint32_t local_clusters = 0;     // absolute, or
  uint32_t local_factor = 1;       // a multiple of k when local_clusters is 0
  nodefl::kcagc::FilterOptions filter;
  nodefl::kcagc::ClusterSpace space = nodefl::kcagc::ClusterSpace::kWhitened;
  kc::Seeding seeding = kc::Seeding::kJoint;
  nodefl::kcagc::VirtualNodeKind virtual_nodes = nodefl::kcagc::VirtualNodeKind::kIntersection;
  uint32_t iterations = 10;
  uint32_t restarts = 10;
  uint32_t global_restarts = 1;
  uint32_t space_dims = 0;
  uint64_t seed = 1;
  std::string output;
  bool quiet = false;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-kcagc-sim --graph DIR [options]\n"
               "kCAGC collaborative attributed graph clustering in one process: L participants\n"
               "each hold the whole graph and a slice of the feature columns; the server sees\n"
               "only securely summed distances (fixed-point sums, as the secure service makes).\n"
               "  --graph DIR            dataset in the shared TSV layout with features.tsv\n"
               "                         (and single-label labels.tsv for the scores)\n"
               "  --mode M               central (Protocol 1 on all features, the baseline),\n"
               "                         basic (Protocol 2), kcagc (Protocol 3, default), tree\n"
               "                         (Protocol 3 at every internal node of a binary tree) or\n"
               "                         joint (not the paper's: the whitened space of all\n"
               "                         features by subspace iteration through secure sums,\n"
               "                         then the central clustering at the server; the server\n"
               "                         and every participant learn that spectral embedding)\n"
               "  --participants L       participants the columns are split among (default 2;\n"
               "                         central ignores it; tree needs at least 2)\n"
               "  --clusters K           k (default: the number of classes in labels.tsv)\n"
               "  --local-clusters K     k-hat for kcagc and tree: a number, or a multiple of k\n"
               "                         written like 2k (default k)\n"
               "  --filter-order N       the filter's order psi (default %u)\n"
               "  --filter F             half: (1 - l/2)^psi, AGC's (default); norm:\n"
               "                         (1 - l/||L_s||)^psi\n"
               "  --self-loops yes|no    filter with A + I as AGC does (default yes)\n"
               "  --space S              the rows clustered: whitened (default: the top k, or\n"
               "                         k-hat, left singular vectors, AGC's embedding), projected\n"
               "                         (on the top right singular vectors) or full (the filtered\n"
               "                         features, as Protocol 1 is written); joint: whitened only\n"
               "  --space-dims D         dimensions of the projected or whitened space (default k)\n"
               "  --seeding S            joint (default: k-means++ over summed distances) or\n"
               "                         local (Protocol 2 line 6: each participant seeds alone)\n"
               "  --virtual V            intersection (default: the mean of the intersection's\n"
               "                         rows) or centre (Protocol 3 line 13: its local centre)\n"
               "  --iterations Q         Lloyd iterations at most, every k-means (default 10)\n"
               "  --restarts R           Protocol 1's restarts on every participant (and in\n"
               "                         central), least inertia kept; local, free (default 10)\n"
               "  --global-restarts R    restarts of the collaborative k-means, each with its own\n"
               "                         secure sums (default 1, the paper's count)\n"
               "  --seed S               column split, seeding, projection (default 1)\n"
               "  --output TSV           write node<TAB>cluster\n"
               "  --quiet                no progress lines on stderr\n"
               "  --help                 this text\n",
               nodefl::kcagc::FilterOptions().order);
}

bool Parse(int argc, char** argv, Options* o) {
  namespace cli = nodefl::host::cli;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&o->graph))
      .Value("--mode", cli::OneOf({"central", "basic", "kcagc", "tree", "joint"},
                                  [o](const std::string& v) {
                                    o->mode = v == "central" ? kc::Mode::kCentral
                                              : v == "basic" ? kc::Mode::kBasic
                                              : v == "tree"  ? kc::Mode::kTree
                                              : v == "joint" ? kc::Mode::kJoint
                                                             : kc::Mode::kKcagc;
                                  }))
      .Value("--participants", cli::Whole(&o->participants, 1, 1'000'000))
      .Value("--clusters", cli::Whole(&o->clusters, 1, 100'000))
      .Value("--local-clusters",
             [o](const std::string& v) {
               std::string digits = v;
               const bool factor = !v.empty() && (v.back() == 'k' || v.back() == 'K');
               if (factor) digits.pop_back();
               uint64_t x = 0;
               if (digits.empty() ? !factor : !cli::ParseWhole(digits, 100'000, &x) || x == 0) {
                 return std::string("a positive number, or a multiple of k like 2k");
               }
               if (factor) {
                 o->local_factor = digits.empty() ? 1 : static_cast<uint32_t>(x);
                 o->local_clusters = 0;
               } else {
                 o->local_clusters = static_cast<uint32_t>(x);
               }
               return std::string();
             })
      .Value("--filter-order", cli::Whole(&o->filter.order, 0, 10'000))
      .Value("--filter", cli::OneOf({"half", "norm"},
                                    [o](const std::string& v) {
                                      o->filter.kind = v == "norm" ? nodefl::kcagc::FilterKind::kNorm
                                                                   : nodefl::kcagc::FilterKind::kHalf;
                                    }))
      .Value("--self-loops", cli::OneOf({"yes", "no"}, [o](const std::string& v) { o->filter.self_loops = v == "yes"; }))
      .Value("--space", cli::OneOf({"full", "projected", "whitened"},
                                   [o](const std::string& v) {
                                     o->space = v == "projected" ? nodefl::kcagc::ClusterSpace::kProjected
                                                : v == "whitened" ? nodefl::kcagc::ClusterSpace::kWhitened
                                                                  : nodefl::kcagc::ClusterSpace::kFull;
                                   }))
      .Value("--space-dims", cli::Whole(&o->space_dims, 1, 100'000))
      .Value("--seeding", cli::OneOf({"joint", "local"},
                                     [o](const std::string& v) {
                                       o->seeding = v == "local" ? kc::Seeding::kLocal : kc::Seeding::kJoint;
                                     }))
      .Value("--virtual", cli::OneOf({"intersection", "centre"},
                                     [o](const std::string& v) {
                                       o->virtual_nodes = v == "centre" ? nodefl::kcagc::VirtualNodeKind::kCentre
                                                                        : nodefl::kcagc::VirtualNodeKind::kIntersection;
                                     }))
      .Value("--iterations", cli::Whole(&o->iterations, 1, 10'000))
      .Value("--restarts", cli::Whole(&o->restarts, 1, 1000))
      .Value("--global-restarts", cli::Whole(&o->global_restarts, 1, 1000))
      .Value("--seed", cli::Whole(&o->seed, 0, UINT64_MAX))
      .Value("--output", cli::Text(&o->output))
      .Switch("--quiet", [o] { o->quiet = true; });
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  if (!cli::RequireDirectory(kTool, "--graph", o->graph)) return false;
  if (!o->output.empty() && !std::ofstream(o->output, std::ios::app)) {
    // Checked before a run that may take minutes, not after it.
    std::fprintf(stderr, "%s: cannot write %s\n", kTool, o->output.c_str());
    return false;
  }
  if (o->mode == kc::Mode::kTree && o->participants < 2) {
    std::fprintf(stderr, "%s: --mode tree needs --participants 2 or more\n", kTool);
    return false;
  }
  if (o->mode == kc::Mode::kJoint && o->space != nodefl::kcagc::ClusterSpace::kWhitened) {
    // The server never holds the features, so it can only cluster the
    // spectral embedding it computes.
    std::fprintf(stderr, "%s: --mode joint computes the whitened space only; drop --space\n", kTool);
    return false;
  }
  return true;
}

const char* Explain(nodefl::StatusCode code) {
  switch (code) {
    case nodefl::StatusCode::kOutOfRange:
      return "a participant's features are too large for the range round's fixed-point code (B_l, or G_l in joint "
             "mode, above 2^16); rescale them";
    case nodefl::StatusCode::kInvalidArgument:
      return "the options do not fit this dataset";
    default:
      return "internal error";
  }
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
  const nodefl::dataset::Graph& g = loaded.graph;
  if (g.num_feature_dims == 0) {
    std::fprintf(stderr, "%s: %s has no features (features.tsv); kCAGC clusters by features and graph\n", kTool,
                 g.name.c_str());
    return 1;
  }
  std::vector<int32_t> labels;
  if (!nodefl::server::kcagc::SingleLabels(g, &labels)) {
    std::fprintf(stderr, "%s: %s has nodes with several labels; the scores need one class per node\n", kTool,
                 g.name.c_str());
    return 1;
  }
  const uint32_t k = o.clusters != 0 ? o.clusters : g.num_label_classes;
  if (k == 0) {
    std::fprintf(stderr, "%s: %s has no labels: give --clusters\n", kTool, g.name.c_str());
    return 1;
  }
  const uint64_t k_hat = o.local_clusters != 0 ? o.local_clusters : uint64_t{o.local_factor} * k;
  if (k > g.num_nodes || k_hat > g.num_nodes) {
    std::fprintf(stderr, "%s: %u clusters (local %" PRIu64 ") for %u nodes: at most one cluster per node\n", kTool, k,
                 k_hat, g.num_nodes);
    return 1;
  }
  const uint32_t parties = o.mode == kc::Mode::kCentral ? 1 : o.participants;
  if (parties > g.num_feature_dims) {
    std::fprintf(stderr, "%s: %u participants for %u feature columns: each needs at least one\n", kTool, parties,
                 g.num_feature_dims);
    return 1;
  }

  kc::RunOptions run;
  run.mode = o.mode;
  run.clusters = k;
  run.local_clusters = static_cast<uint32_t>(k_hat);
  run.filter = o.filter;
  run.space = o.space;
  run.space_dims = o.space_dims;
  run.seeding = o.seeding;
  run.virtual_nodes = o.virtual_nodes;
  run.iterations = o.iterations;
  run.local_restarts = o.restarts;
  run.global_restarts = o.global_restarts;
  run.seed = o.seed;
  if (!o.quiet) run.progress = [](const std::string& line) { std::fprintf(stderr, "%s: %s\n", kTool, line.c_str()); };

  const char* filter_name = o.filter.kind == nodefl::kcagc::FilterKind::kNorm ? "norm" : "half";
  const char* space_name = o.space == nodefl::kcagc::ClusterSpace::kProjected  ? "projected"
                           : o.space == nodefl::kcagc::ClusterSpace::kWhitened ? "whitened"
                                                                               : "full";
  const char* seeding_name = o.seeding == kc::Seeding::kLocal ? "local" : "joint";
  const char* virtual_name = o.virtual_nodes == nodefl::kcagc::VirtualNodeKind::kCentre ? "centre" : "intersection";
  std::printf("%s: %s on %s: n %u, m %u, L %u, k %u, k-hat %" PRIu64 ", filter %s order %u%s, space %s, "
              "seeding %s, virtual %s, Q %u, restarts %u/%u, seed %" PRIu64 "\n",
              kTool, kc::ModeName(o.mode), g.name.c_str(), g.num_nodes, g.num_feature_dims, parties, k, k_hat,
              filter_name, o.filter.order, o.filter.self_loops ? "" : " no self loops", space_name, seeding_name, virtual_name,
              o.iterations, o.restarts, o.global_restarts, o.seed);
  std::fflush(stdout);

  // The participants' slices (central: all columns in order).
  std::vector<std::vector<uint32_t>> columns;
  if (o.mode == kc::Mode::kCentral) {
    columns.emplace_back(g.num_feature_dims);
    for (uint32_t j = 0; j < g.num_feature_dims; ++j) columns[0][j] = j;
  } else {
    columns = kc::SplitColumns(g.num_feature_dims, parties, o.seed);
  }
  std::vector<nodefl::kcagc::Matrix> slices;
  for (const auto& c : columns) slices.push_back(kc::DenseSlice(g, c));

  kc::SimulatedSecureAggregator aggregator;
  const nodefl::Result<kc::RunReport> result = kc::RunSimulation(kc::GraphViewOf(g), std::move(slices), run, &aggregator);
  if (!result.ok()) {
    std::fprintf(stderr, "%s: the run failed (%s): %s\n", kTool, result.status().str(), Explain(result.status().code()));
    return 1;
  }
  const kc::RunReport& r = result.value();

  const nodefl::Result<kc::ClusteringScores> scores = kc::ScoreClustering(r.assignment, labels);
  if (scores.ok()) {
    std::printf("accuracy %.4f nmi %.4f macro_f1 %.4f (%u labelled nodes, %u clusters used, %u classes)\n",
                scores->accuracy, scores->nmi, scores->macro_f1, scores->scored, scores->clusters, scores->classes);
  } else {
    std::printf("accuracy - nmi - macro_f1 - (no labelled nodes)\n");
  }
  const std::string spectral =
      r.spectral_steps == 0 ? std::string()
                            : "spectral steps " + std::to_string(r.spectral_steps) + " (block " +
                                  std::to_string(r.spectral_block) + (r.spectral_converged ? ", converged)" : ", step cap)");
  if (o.mode == kc::Mode::kCentral) {
    std::printf("central: no secure sums; %s%sProtocol 1: %u unassigned by the 1/9 step, %u Lloyd iterations; "
                "wall %.2f s (filter %.2f s)\n",
                spectral.c_str(), spectral.empty() ? "" : "; ", r.local_unassigned_max, r.local_iterations_max,
                r.seconds, r.filter_seconds);
  } else if (o.mode == kc::Mode::kJoint) {
    // The paper has no joint mode, so there is no paper count to print.
    std::printf("intersections -; %s; secure sums %" PRIu64 " (formula %" PRIu64 ", paper -); aggregation rounds %" PRIu64
                "; uploaded %" PRIu64 " bytes; clipped %" PRIu64 "\n",
                spectral.c_str(), r.cost.scalars, r.expected_secure_sums, r.cost.rounds, r.cost.uploaded_bytes,
                r.cost.clipped);
    std::printf("joint space: sigma");
    for (const double s : r.singular_values) std::printf(" %.6g", s);
    std::printf("; Protocol 1 at the server: %u unassigned by the 1/9 step, %u Lloyd iterations\n",
                r.local_unassigned_max, r.local_iterations_max);
    const double resolution = 1.0 / r.code.scale;
    std::printf("range: clip %.6g, scale 2^%d (each value within %.3g, each sum within %.3g); wall %.2f s "
                "(filter %.2f s)\n",
                static_cast<double>(r.clip), static_cast<int>(std::lround(std::log2(r.code.scale))), resolution / 2,
                resolution * parties / 2, r.seconds, r.filter_seconds);
  } else {
    const double resolution = 1.0 / r.code.scale;
    std::printf("intersections %" PRIu64 " (largest %" PRIu64 ")%s; secure sums %" PRIu64 " (formula %" PRIu64
                ", paper %.4g); aggregation rounds %" PRIu64 "; uploaded %" PRIu64 " bytes; clipped %" PRIu64 "\n",
                r.intersections, r.max_intersections,
                o.mode == kc::Mode::kTree ? (", internal nodes " + std::to_string(r.internal_nodes)).c_str() : "",
                r.cost.scalars, r.expected_secure_sums, r.paper_secure_sums, r.cost.rounds, r.cost.uploaded_bytes,
                r.cost.clipped);
    std::printf("range: clip %.6g, scale 2^%d (each value within %.3g, each sum within %.3g); wall %.2f s "
                "(filter %.2f s)\n",
                static_cast<double>(r.clip), static_cast<int>(std::lround(std::log2(r.code.scale))), resolution / 2,
                resolution * parties / 2, r.seconds, r.filter_seconds);
  }
  if (!o.output.empty()) {
    std::ofstream out(o.output);
    for (size_t v = 0; v < r.assignment.size(); ++v) out << v << '\t' << r.assignment[v] << '\n';
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", kTool, o.output.c_str());
      return 1;
    }
  }
  return 0;
}
