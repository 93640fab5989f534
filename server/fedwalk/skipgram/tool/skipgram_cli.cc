// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "skipgram_cli.h"

#include <algorithm>
#include <cstdio>

#include "nodefl/server/fedwalk/skipgram/corpus_coverage.h"

namespace nodefl::server::fedwalk::cli {

const char* SkipGramFlagsHelp() {
  return "  --dim D            embedding size (default 128)\n"
         "  --window W         most positions between centre and context (default 10)\n"
         "  --negative K       negative samples per pair (default 5)\n"
         "  --epochs E         passes over the walks; 0 = enough for 32 occurrences of\n"
         "                     each edge the walks crossed (default 0)\n"
         "  --alpha A          initial learning rate (default 0.025)\n"
         "  --min-alpha A      final learning rate, reached linearly (default 0.0001)\n"
         "  --init-range R     initial vectors uniform in +-R/dim (default 0.5, word2vec's;\n"
         "                     gensim 4 uses 1)\n"
         "  --threads T        training threads, 0 = all hardware threads (default 2)\n"
         "  --seed S           seed of the initial vectors and all random draws (default 1)\n"
         "  --sample T         frequent-token subsampling threshold, 0 = off (default 0)\n"
         "  --no-dynamic-window  always use the full window (default: uniform 1..W per centre)\n";
}

host::cli::SharedFlag ParseSkipGramFlag(int argc, char** argv, int* i, SkipGramOptions* o, std::string* error) {
  using host::cli::SharedFlag;
  const std::string flag = argv[*i];
  if (flag == "--no-dynamic-window") {
    o->dynamic_window = false;
    return SharedFlag::kTaken;
  }
  const bool is_integer = flag == "--dim" || flag == "--window" || flag == "--negative" || flag == "--epochs" ||
                          flag == "--threads" || flag == "--seed";
  const bool is_real = flag == "--alpha" || flag == "--min-alpha" || flag == "--sample" || flag == "--init-range";
  if (!is_integer && !is_real) return SharedFlag::kNotMine;
  if (*i + 1 >= argc) {
    *error = flag + " needs a value (see --help)";
    return SharedFlag::kBad;
  }
  const std::string value = argv[++*i];
  if (is_integer) {
    uint64_t x = 0;
    const uint64_t max = flag == "--seed" ? UINT64_MAX : UINT32_MAX;
    if (!host::cli::ParseWhole(value, max, &x)) {
      *error = flag + " expects a non-negative integer, got '" + value + "'";
      return SharedFlag::kBad;
    }
    if (flag == "--dim") o->dim = static_cast<uint32_t>(x);
    if (flag == "--window") o->window = static_cast<uint32_t>(x);
    if (flag == "--negative") o->negative = static_cast<uint32_t>(x);
    if (flag == "--epochs") o->epochs = static_cast<uint32_t>(x);
    if (flag == "--threads") o->threads = static_cast<unsigned>(x);
    if (flag == "--seed") o->seed = x;
  } else {
    double x = 0;
    if (!host::cli::ParseReal(value, &x)) {
      *error = flag + " expects a number, got '" + value + "'";
      return SharedFlag::kBad;
    }
    if (flag == "--alpha") o->alpha = static_cast<float>(x);
    if (flag == "--min-alpha") o->min_alpha = static_cast<float>(x);
    if (flag == "--sample") o->sample = x;
    if (flag == "--init-range") o->init_range = static_cast<float>(x);
  }
  return SharedFlag::kTaken;
}

host::cli::SharedFlagsFn SkipGramFlags(SkipGramOptions* options) {
  return [options](int argc, char** argv, int* i, std::string* error) {
    return ParseSkipGramFlag(argc, argv, i, options, error);
  };
}

void ChooseEpochs(const char* tool, const WalkCorpus& corpus, SkipGramOptions* options) {
  if (options->epochs != 0) return;
  const auto start = std::chrono::steady_clock::now();
  const CorpusCoverage coverage = MeasureCoverage(corpus);
  options->epochs = AutoEpochs(coverage);
  std::fprintf(stderr, "%s: the walks cross about %llu distinct edges, %.1f tokens per edge: %u epoch(s) (%.2f s)\n",
               tool, static_cast<unsigned long long>(coverage.distinct_pairs), coverage.tokens_per_pair,
               options->epochs, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

ProgressLine::ProgressLine(const char* what, const char* unit, std::chrono::seconds interval)
    : what_(what), unit_(unit), interval_(interval), start_(std::chrono::steady_clock::now()), last_(start_) {}

void ProgressLine::operator()(uint64_t done, uint64_t total) {
  const auto now = std::chrono::steady_clock::now();
  if (done >= total || now - last_ < interval_) return;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = static_cast<double>(done) / std::max(seconds, 1e-9);
  const double remaining = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  std::fprintf(stderr, "  %s %5.1f%% of %llu %s, %.0f %s/s, about %.0f s left\n", what_,
               100.0 * static_cast<double>(done) / static_cast<double>(std::max<uint64_t>(total, 1)),
               static_cast<unsigned long long>(total), unit_, rate, unit_, remaining);
}

}  // namespace nodefl::server::fedwalk::cli
