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
  uint64_t vertices = 0;
  bool have_vertices = false;
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
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      Usage(stdout);
      std::exit(0);
    }
    std::string error;
    const cli::FlagResult r = cli::ParseSkipGramFlag(argc, argv, &i, &o->skipgram, &error);
    if (r == cli::FlagResult::kBad) {
      std::fprintf(stderr, "nodefl-skipgram: %s\n", error.c_str());
      return false;
    }
    if (r == cli::FlagResult::kTaken) continue;
    if (arg != "--walks" && arg != "--output" && arg != "--vertices") {
      std::fprintf(stderr, "nodefl-skipgram: unknown argument '%s' (see --help)\n", arg.c_str());
      return false;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "nodefl-skipgram: %s needs a value (see --help)\n", arg.c_str());
      return false;
    }
    const std::string value = argv[++i];
    if (arg == "--walks") o->walks = value;
    if (arg == "--output") o->output = value;
    if (arg == "--vertices") {
      if (!cli::ParseUnsigned(value, UINT32_MAX - 1, &o->vertices) || o->vertices == 0) {
        std::fprintf(stderr, "nodefl-skipgram: --vertices expects a positive integer, got '%s'\n", value.c_str());
        return false;
      }
      o->have_vertices = true;
    }
  }
  if (o->walks.empty() || o->output.empty() || !o->have_vertices) {
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
  std::printf("load_s=%.2f train_s=%.2f tokens_per_s=%.0f\n", load_s, train_s,
              static_cast<double>(tokens) / std::max(train_s, 1e-9));
  return 0;
}
