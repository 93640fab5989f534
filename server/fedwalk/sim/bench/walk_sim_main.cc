// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-fedwalk-walk-sim: FedWalk's paper mode (HCT job, device-to-device
// walks, SkipGram) in one process, with the SDK's device code and the
// server's pipeline, minus the transport (walk_simulation.h). Minutes of
// P-256 key set-up per TLS run become seconds, so the parts of the walk
// protocol can be switched off one at a time (--p 0, --exact-encoder,
// --oracle-predictor) to see what each costs against centralized DeepWalk.
// Prints the walk statistics (one key=value line, then readable lines) and
// the time of each phase; writes the walks and the embeddings if asked.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/server/fedwalk/sim/walk_simulation.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/skipgram/walk_file.h"
#include "skipgram_cli.h"

namespace {

using namespace nodefl::server::fedwalk;
using Clock = std::chrono::steady_clock;
constexpr const char* kTool = "nodefl-fedwalk-walk-sim";

struct Options {
  std::string graph;
  std::string walks_out;
  std::string output;
  WalkSimulationOptions sim;
  double epsilon = 2.0;
  uint32_t epochs = 0;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-fedwalk-walk-sim --graph DIR [options]\n"
               "FedWalk's paper mode simulated in one process: every vertex's HCT upload and\n"
               "walk steps are made by the SDK's device code, the tree and codebook by the\n"
               "server's pipeline, as `nodefl-server --job fedwalk --fedwalk_mode paper` runs\n"
               "them, without TLS. Prints what the walks did (hops, encoder substitutions,\n"
               "consecutive entries against the true graph, messages per walk against\n"
               "Theorem 4.2) and the time of each phase.\n"
               "  --graph DIR          dataset in the shared TSV layout (edges.tsv)\n"
               "  --gamma G            walks per vertex (default 80)\n"
               "  --length L           entries per walk, 2 .. 1000 (default 40)\n"
               "  --p P                2-hop predictor probability, 0 .. 1 (default 0.2; 0: never)\n"
               "  --epsilon E          epsilon of the degree vectors and of Eq. 12 (default 2)\n"
               "  --bins K             bins, 0 = floor(ln n), at most 16 (default 0)\n"
               "  --codebook-k K       most codebook entries per vertex (default 256, the job's)\n"
               "  --codebook-capacity C  codebook entries each device keeps per neighbour, plus a\n"
               "                       spare of 1024, as the emulator sizes it (default 8); 0 =\n"
               "                       room for every row\n"
               "  --exact-encoder      ablation: Enc(x) = x (the identity codebook replaces Eq. 12's)\n"
               "  --predictor P        where a 2-hop jump goes: tree (the paper's: near the skipped\n"
               "                       neighbour in the HCT) or neighbours (one of the device's own\n"
               "                       other neighbours) (default neighbours, the job's)\n"
               "  --oracle-predictor   ablation: a 2-hop jump lands on a uniform true neighbour of\n"
               "                       the skipped vertex instead of the predictor's pick\n"
               "  --seed S             seed of the bin plan, the devices' noise and DRBGs, the walk\n"
               "                       order and training (default 1)\n"
               "  --threads T          worker threads, 0 = all hardware threads (default 2)\n"
               "  --walks-out FILE     write the walks, one per line\n"
               "  --output EMB         train SkipGram (the job's defaults) and write the embeddings\n"
               "                       (word2vec text)\n"
               "  --epochs E           SkipGram passes, 0 = chosen from the walks (default 0)\n"
               "  --help               this text\n");
}

bool Parse(int argc, char** argv, Options* o) {
  namespace cli = nodefl::host::cli;
  constexpr double kMaxReal = std::numeric_limits<double>::max();
  o->sim.threads = 2;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&o->graph))
      .Value("--gamma", cli::Whole(&o->sim.walks_per_vertex, 1, 100000))
      .Value("--length", cli::Whole(&o->sim.walk_length, 2, nodefl::fedwalk::kMaxWalkLength))
      .Value("--p", cli::Real(&o->sim.p, 0, false, 1))
      .Value("--epsilon", cli::Real(&o->epsilon, 0, true, kMaxReal))
      .Value("--bins", cli::Whole(&o->sim.bins, 0, nodefl::fedwalk::kMaxBins))
      .Value("--codebook-k", cli::Whole(&o->sim.codebook_k, 1, nodefl::fedwalk::kMaxCodebookK))
      .Value("--codebook-capacity", cli::Whole(&o->sim.codebook_entries_per_neighbour, 0, 1u << 20))
      .Switch("--exact-encoder", [o] { o->sim.exact_encoder = true; })
      .Value("--predictor", cli::OneOf({"tree", "neighbours"},
                                       [o](const std::string& v) {
                                         o->sim.predictor = *nodefl::fedwalk::ParseJumpPredictor(v.c_str());
                                       }))
      .Switch("--oracle-predictor", [o] { o->sim.oracle_predictor = true; })
      .Value("--seed", cli::Whole(&o->sim.seed, 0, UINT64_MAX))
      .Value("--threads", cli::Whole(&o->sim.threads, 0, 1024))
      .Value("--walks-out", cli::Text(&o->walks_out))
      .Value("--output", cli::Text(&o->output))
      .Value("--epochs", cli::Whole(&o->epochs, 0, 1000));
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  if (!cli::RequireDirectory(kTool, "--graph", o->graph)) return false;
  o->sim.epsilon_bins = o->sim.epsilon_walk = o->epsilon;
  if (o->sim.threads == 0) o->sim.threads = std::max(1u, std::thread::hardware_concurrency());
  return true;
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

unsigned long long U(uint64_t x) { return static_cast<unsigned long long>(x); }

// "<name>_same=.. <name>_edge=.. <name>_two_hop=.. <name>_farther=.."
void PrintClasses(const char* name, const DistanceCounts& c) {
  std::printf(" %s_same=%llu %s_edge=%llu %s_two_hop=%llu %s_farther=%llu", name, U(c.same), name, U(c.edge), name,
              U(c.two_hop), name, U(c.farther));
}

void PrintClassShares(const char* what, const DistanceCounts& c) {
  const uint64_t t = c.total();
  std::printf("%s: %llu; same %.4f, edge %.4f, two hops %.4f, farther %.4f\n", what, U(t), Share(c.same, t),
              Share(c.edge, t), Share(c.two_hop, t), Share(c.farther, t));
}

void PrintStatistics(const Options& o, const nodefl::dataset::Graph& g, const WalkSimulationStats& s) {
  const WalkSimulationOptions& x = o.sim;
  std::printf("dataset=%s nodes=%u edges=%llu bins=%u codebook_k=%u epsilon=%g gamma=%u length=%u p=%g "
              "predictor=%s exact_encoder=%d oracle_predictor=%d seed=%llu walks=%llu completed=%llu dead_ends=%llu dropped=%llu "
              "tokens=%llu neighbour_hops=%llu predicted_hops=%llu empty_pool_hops=%llu pool_entries=%llu "
              "neighbour_encodings=%llu neighbour_substitutions=%llu self_encodings=%llu self_substitutions=%llu",
              g.name.c_str(), g.num_nodes, U(g.num_edges), s.bins, x.codebook_k, o.epsilon, x.walks_per_vertex,
              x.walk_length, x.p, nodefl::fedwalk::JumpPredictorName(x.predictor), x.exact_encoder ? 1 : 0, x.oracle_predictor ? 1 : 0, U(x.seed), U(s.walks),
              U(s.completed), U(s.dead_ends), U(s.dropped), U(s.tokens), U(s.neighbour_hops), U(s.predicted_hops),
              U(s.empty_pool_hops), U(s.pool_entries), U(s.neighbour_encodings), U(s.neighbour_substitutions),
              U(s.self_encodings), U(s.self_substitutions));
  PrintClasses("pairs", s.consecutive);
  PrintClasses("jump_vs_previous", s.jump_vs_previous);
  PrintClasses("jump_vs_skipped", s.jump_vs_skipped);
  std::printf(" messages_mean=%.4f messages_stderr=%.4f messages_recurrence=%.4f max_truncated_mass=%.3g "
              "score_sensitivity=%.6g epsilon_per_encoding=%.6g tree_bytes=%llu codebook_bytes=%llu "
              "rows_not_kept=%llu devices_without_own_row=%llu devices_without_walk_neighbours=%llu\n",
              s.messages_mean, s.messages_stderr, s.messages_recurrence, s.max_truncated_mass, s.score_sensitivity,
              s.epsilon_per_encoding, U(s.tree_bytes), U(s.codebook_bytes), U(s.rows_not_kept),
              U(s.devices_without_own_row), U(s.devices_without_walk_neighbours));

  std::printf("walks: %llu issued, %llu completed, %llu dead ends, %llu dropped; %llu entries\n", U(s.walks),
              U(s.completed), U(s.dead_ends), U(s.dropped), U(s.tokens));
  const uint64_t forwards = s.neighbour_hops + s.predicted_hops;
  std::printf("forwards: %llu; to the neighbour %.4f (of all forwards, %.4f after an empty pool), 2-hop jumps "
              "%.4f (mean pool %.1f)\n",
              U(forwards), Share(s.neighbour_hops, forwards), Share(s.empty_pool_hops, forwards),
              Share(s.predicted_hops, forwards),
              s.predicted_hops ? static_cast<double>(s.pool_entries) / static_cast<double>(s.predicted_hops) : 0.0);
  std::printf("encoder substitutions: Enc(u) %.4f of %llu, Enc(self) after a jump %.4f of %llu\n",
              Share(s.neighbour_substitutions, s.neighbour_encodings), U(s.neighbour_encodings),
              Share(s.self_substitutions, s.self_encodings), U(s.self_encodings));
  PrintClassShares("consecutive entries", s.consecutive);
  PrintClassShares("jumps vs the device that jumped", s.jump_vs_previous);
  PrintClassShares("jumps vs the skipped neighbour", s.jump_vs_skipped);
  const double z = s.messages_stderr > 0 ? (s.messages_mean - s.messages_recurrence) / s.messages_stderr : 0.0;
  std::printf("messages per completed walk: %.4f +- %.4f (Theorem 4.2 recurrence %.4f, %+.1f standard errors)\n",
              s.messages_mean, s.messages_stderr, s.messages_recurrence, z);
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
  const std::vector<std::vector<uint32_t>> neighbours = nodefl::dataset::NeighbourLists(g);
  std::fprintf(stderr, "%s: %s, %u nodes, %llu edges; gamma %u, l %u, p %g, %s predictor, epsilon %g%s%s, %u threads\n",
               kTool, g.name.c_str(), g.num_nodes, U(g.num_edges), o.sim.walks_per_vertex, o.sim.walk_length, o.sim.p,
               nodefl::fedwalk::JumpPredictorName(o.sim.predictor), o.epsilon, o.sim.exact_encoder ? ", exact encoder" : "",
               o.sim.oracle_predictor ? ", oracle predictor" : "", o.sim.threads);

  // Progress on stderr every 5 s while the simulation runs.
  WalkSimulationProgress progress;
  std::atomic<bool> running{true};
  std::thread reporter([&] {
    static const char* kStages[] = {"HCT uploads", "HCT pipeline", "devices", "walk entries", "statistics", "done"};
    static const char* kPipeline[] = {"dissimilarities", "clustering", "codebook", "done"};
    auto last = Clock::now();
    while (running.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Clock::now() - last < std::chrono::seconds(5)) continue;
      last = Clock::now();
      const int stage = progress.stage.load();
      if (stage == WalkSimulationProgress::kPipeline) {
        const int p = progress.pipeline.stage.load();
        const uint64_t total = progress.pipeline.total_pairs.load();
        std::fprintf(stderr, "  HCT pipeline: %s", kPipeline[p]);
        if (p == 0 && total > 0) {
          std::fprintf(stderr, " %.1f%%", 100.0 * Share(progress.pipeline.done_pairs.load(), total));
        }
        std::fprintf(stderr, "\n");
      } else {
        const uint64_t total = progress.total.load();
        std::fprintf(stderr, "  %s %.1f%% of %llu\n", kStages[stage], 100.0 * Share(progress.done.load(), total),
                     U(total));
      }
    }
  });
  const WalkSimulationResult r = SimulateWalks(neighbours, o.sim, &progress);
  running.store(false);
  reporter.join();
  if (!r.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, r.error.c_str());
    return 1;
  }

  std::string error;
  double write_s = 0, train_s = 0;
  uint32_t epochs = 0;
  if (!o.walks_out.empty()) {
    const auto t0 = Clock::now();
    if (!SaveWalkFile(r.corpus, o.walks_out, &error)) {
      std::fprintf(stderr, "%s: %s\n", kTool, error.c_str());
      return 1;
    }
    write_s = SecondsSince(t0);
  }
  if (!o.output.empty()) {
    // What the walk job trains (FedWalkWalkJob::RunTraining): the default
    // SkipGram with the job's threads and seed.
    const auto t0 = Clock::now();
    SkipGramOptions skipgram;
    skipgram.threads = o.sim.threads;
    skipgram.seed = o.sim.seed;
    skipgram.epochs = o.epochs;
    skipgram.epochs = epochs = EpochsFor(r.corpus, skipgram);
    std::fprintf(stderr, "%s: training SkipGram, %u epoch(s) over %llu tokens\n", kTool, epochs,
                 U(r.corpus.num_tokens()));
    cli::ProgressLine line("training", "tokens");
    const std::optional<SkipGramModel> model = Train(r.corpus, skipgram, std::ref(line), &error);
    if (!model || !model->WriteWord2VecText(o.output, &error)) {
      std::fprintf(stderr, "%s: %s\n", kTool, error.c_str());
      return 1;
    }
    train_s = SecondsSince(t0);
  }

  PrintStatistics(o, g, r.stats);
  const WalkSimulationSeconds& t = r.seconds;
  std::printf("uploads_s=%.2f dissimilarity_s=%.2f clustering_s=%.2f codebook_s=%.2f pipeline_s=%.2f "
              "devices_s=%.2f walks_s=%.2f statistics_s=%.2f write_walks_s=%.2f train_s=%.2f epochs=%u\n",
              t.uploads, t.dissimilarity, t.clustering, t.codebook, t.pipeline, t.devices, t.walks, t.statistics,
              write_s, train_s, epochs);
  return 0;
}
