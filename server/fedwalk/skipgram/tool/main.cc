// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-skipgram: trains SkipGram embeddings on a text walk file (one walk
// per line, the format gensim's LineSentence reads) and writes them in the
// word2vec text format. Prints the token count, training time and
// throughput, so it doubles as the trainer's benchmark.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/skipgram/walk_file.h"
#include "skipgram_cli.h"

namespace {

using namespace nodefl::server::fedwalk;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string walks;
  std::string output;
  uint64_t vertices = 0;  // 0: not given (a given count is at least 1)
  SkipGramOptions skipgram;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-skipgram --walks FILE --vertices N --output FILE [options]\n"
               "Trains SkipGram with negative sampling on a walk file and writes the embeddings\n"
               "in word2vec text format ('N d' line, then 'id v1 ... vd' per vertex).\n"
               "  --walks FILE       one walk per line, vertex ids separated by spaces\n"
               "  --vertices N       vertex count: ids must be below N, N rows are written\n"
               "  --output FILE      where the embeddings go\n"
               "%s"
               "  --help             this text\n",
               cli::SkipGramFlagsHelp());
}

bool Parse(int argc, char** argv, Options* o) {
  namespace flags_ns = nodefl::host::cli;
  flags_ns::FlagParser flags("nodefl-skipgram");
  flags.Shared(cli::SkipGramFlags(&o->skipgram))
      .Value("--walks", flags_ns::Text(&o->walks))
      .Value("--output", flags_ns::Text(&o->output))
      .Value("--vertices", [o](const std::string& value) {
        uint64_t n = 0;
        if (!flags_ns::ParseWhole(value, UINT32_MAX - 1, &n) || n == 0) return std::string("a positive integer");
        o->vertices = n;
        return std::string();
      });
  const flags_ns::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == flags_ns::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == flags_ns::ParseOutcome::kError) return false;
  if (o->walks.empty() || o->output.empty() || o->vertices == 0) {
    std::fprintf(stderr, "nodefl-skipgram: --walks, --vertices and --output are required (see --help)\n");
    return false;
  }
  if (const std::string problem = ValidateSkipGramOptions(o->skipgram); !problem.empty()) {
    std::fprintf(stderr, "nodefl-skipgram: %s\n", problem.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  std::string error;
  auto t0 = Clock::now();
  const std::optional<WalkCorpus> corpus = LoadWalkFile(o.walks, static_cast<uint32_t>(o.vertices), &error);
  if (!corpus) {
    std::fprintf(stderr, "nodefl-skipgram: %s\n", error.c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "nodefl-skipgram: %zu walks, %llu tokens, %u vertices loaded in %.2f s\n",
               corpus->num_walks(), static_cast<unsigned long long>(corpus->num_tokens()),
               corpus->num_vertices(), load_s);

  t0 = Clock::now();
  cli::ProgressLine line("training", "tokens");
  cli::ChooseEpochs("nodefl-skipgram", *corpus, &o.skipgram);
  const std::optional<SkipGramModel> model = Train(*corpus, o.skipgram, std::ref(line), &error);
  const double train_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!model) {
    std::fprintf(stderr, "nodefl-skipgram: %s\n", error.c_str());
    return 1;
  }
  if (!model->WriteWord2VecText(o.output, &error)) {
    std::fprintf(stderr, "nodefl-skipgram: %s\n", error.c_str());
    return 1;
  }
  const uint64_t tokens = uint64_t{o.skipgram.epochs} * corpus->num_tokens();
  std::printf("walks=%zu tokens=%llu vertices=%u dim=%u window=%u negative=%u epochs=%u threads=%u\n",
              corpus->num_walks(), static_cast<unsigned long long>(tokens), corpus->num_vertices(),
              o.skipgram.dim, o.skipgram.window, o.skipgram.negative, o.skipgram.epochs, o.skipgram.threads);
  std::printf("load_s=%.3f train_s=%.3f tokens_per_s=%.0f\n", load_s, train_s,
              static_cast<double>(tokens) / std::max(train_s, 1e-9));
  return 0;
}
