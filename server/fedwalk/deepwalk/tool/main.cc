// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-deepwalk: the centralized DeepWalk baseline end to end - load a
// dataset, generate gamma uniform random walks of length l per vertex,
// train SkipGram on them and write word2vec text embeddings. --walks-out
// also writes the walks as a text walk file, so gensim (or nodefl-skipgram)
// can be trained on exactly the same walks for comparison.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/deepwalk/deepwalk_walks.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/skipgram/walk_file.h"
#include "skipgram_cli.h"

namespace {

using namespace nodefl::server::fedwalk;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string graph;
  std::string output;
  std::string walks_out;
  DeepWalkOptions walks;
  SkipGramOptions skipgram;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-deepwalk --graph DIR --output EMB [options]\n"
               "DeepWalk: gamma uniform random walks of length l from every vertex, then\n"
               "SkipGram; writes the embeddings in word2vec text format.\n"
               "  --graph DIR        dataset in the shared TSV layout (edges.tsv)\n"
               "  --output EMB       where the embeddings go\n"
               "  --walks-out FILE   also write the walks, one per line (gensim LineSentence)\n"
               "  --gamma G          walks per vertex (default 80)\n"
               "  --length L         vertices per walk, the start included (default 40)\n"
               "%s"
               "  (--threads and --seed also drive the walk generation; the walks depend on\n"
               "   the seed only, not on the thread count)\n"
               "  --help             this text\n",
               cli::SkipGramFlagsHelp());
}

bool Parse(int argc, char** argv, Options* o) {
  namespace flags_ns = nodefl::host::cli;
  flags_ns::FlagParser flags("nodefl-deepwalk");
  flags.Shared(cli::SkipGramFlags(&o->skipgram))
      .Value("--graph", flags_ns::Text(&o->graph))
      .Value("--output", flags_ns::Text(&o->output))
      .Value("--walks-out", flags_ns::Text(&o->walks_out))
      .Value("--gamma", flags_ns::Whole(&o->walks.walks_per_vertex, 1, 1000000))
      .Value("--length", flags_ns::Whole(&o->walks.walk_length, 1, 1000000));
  const flags_ns::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == flags_ns::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == flags_ns::ParseOutcome::kError) return false;
  if (o->graph.empty() || o->output.empty()) {
    std::fprintf(stderr, "nodefl-deepwalk: --graph and --output are required (see --help)\n");
    return false;
  }
  if (const std::string problem = ValidateSkipGramOptions(o->skipgram); !problem.empty()) {
    std::fprintf(stderr, "nodefl-deepwalk: %s\n", problem.c_str());
    return false;
  }
  o->walks.threads = o->skipgram.threads;
  o->walks.seed = o->skipgram.seed;
  return true;
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "nodefl-deepwalk: %s\n", loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  std::fprintf(stderr, "nodefl-deepwalk: %s, %u nodes, %llu edges; gamma %u, length %u, %u threads\n",
               g.name.c_str(), g.num_nodes, static_cast<unsigned long long>(g.num_edges),
               o.walks.walks_per_vertex, o.walks.walk_length, o.skipgram.threads);

  std::string error;
  auto t0 = Clock::now();
  cli::ProgressLine walk_line("walking", "walks");
  const std::optional<WalkCorpus> corpus = GenerateDeepWalks(g, o.walks, std::ref(walk_line), &error);
  const double walk_s = SecondsSince(t0);
  if (!corpus) {
    std::fprintf(stderr, "nodefl-deepwalk: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "nodefl-deepwalk: %zu walks, %llu tokens in %.2f s\n", corpus->num_walks(),
               static_cast<unsigned long long>(corpus->num_tokens()), walk_s);
  double write_walks_s = 0;
  if (!o.walks_out.empty()) {
    t0 = Clock::now();
    if (!SaveWalkFile(*corpus, o.walks_out, &error)) {
      std::fprintf(stderr, "nodefl-deepwalk: %s\n", error.c_str());
      return 1;
    }
    write_walks_s = SecondsSince(t0);
  }

  t0 = Clock::now();
  cli::ProgressLine train_line("training", "tokens");
  cli::ChooseEpochs("nodefl-deepwalk", *corpus, &o.skipgram);
  const std::optional<SkipGramModel> model = Train(*corpus, o.skipgram, std::ref(train_line), &error);
  const double train_s = SecondsSince(t0);
  if (!model) {
    std::fprintf(stderr, "nodefl-deepwalk: %s\n", error.c_str());
    return 1;
  }
  if (!model->WriteWord2VecText(o.output, &error)) {
    std::fprintf(stderr, "nodefl-deepwalk: %s\n", error.c_str());
    return 1;
  }
  const uint64_t tokens = uint64_t{o.skipgram.epochs} * corpus->num_tokens();
  std::printf("dataset=%s nodes=%u edges=%llu gamma=%u length=%u dim=%u window=%u negative=%u epochs=%u "
              "threads=%u seed=%llu\n",
              g.name.c_str(), g.num_nodes, static_cast<unsigned long long>(g.num_edges), o.walks.walks_per_vertex,
              o.walks.walk_length, o.skipgram.dim, o.skipgram.window, o.skipgram.negative, o.skipgram.epochs,
              o.skipgram.threads, static_cast<unsigned long long>(o.skipgram.seed));
  std::printf("walks=%zu tokens=%llu walk_s=%.3f write_walks_s=%.3f train_s=%.3f tokens_per_s=%.0f\n",
              corpus->num_walks(), static_cast<unsigned long long>(tokens), walk_s, write_walks_s, train_s,
              static_cast<double>(tokens) / std::max(train_s, 1e-9));
  return 0;
}
