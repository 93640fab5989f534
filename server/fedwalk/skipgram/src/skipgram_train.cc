// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sets up SkipGram training and runs the workers; the per-walk SGD itself
// is in skipgram_kernel.cc.
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "nodefl/server/fedwalk/skipgram/corpus_coverage.h"
#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/parallel_progress.h"
#include "nodefl/server/fedwalk/skipgram/learning_rate.h"
#include "nodefl/server/fedwalk/skipgram/negative_sampler.h"
#include "nodefl/server/fedwalk/skipgram/sigmoid_table.h"
#include "skipgram_kernel.h"

namespace nodefl::server::fedwalk {

namespace {

// Workers publish their token counts (and re-read the learning rate) this
// often: often enough for a smooth schedule, rarely enough that the shared
// counter costs nothing.
constexpr uint64_t kTokensPerUpdate = 10000;

// Stream 0 of the user seed initialises the model; worker t uses stream
// 1 + t.
constexpr uint64_t kInitStream = 0;

// word2vec's keep probability for a token with count c of `total`
// (Mikolov et al. 2013 as implemented in word2vec.c and gensim).
std::vector<double> KeepProbabilities(const WalkCorpus& corpus, double sample) {
  std::vector<double> keep(corpus.num_vertices(), 1.0);
  if (sample <= 0) return keep;
  const double threshold = sample * static_cast<double>(corpus.num_tokens());
  for (uint32_t v = 0; v < corpus.num_vertices(); ++v) {
    const double c = static_cast<double>(corpus.counts()[v]);
    if (c > 0) keep[v] = std::min(1.0, (std::sqrt(c / threshold) + 1.0) * threshold / c);
  }
  return keep;
}

// Walk index where each of `parts` contiguous ranges starts, with about
// equal token counts per range; boundaries[parts] = num_walks.
std::vector<size_t> SplitByTokens(const WalkCorpus& corpus, unsigned parts) {
  const std::vector<uint64_t>& offsets = corpus.offsets();
  std::vector<size_t> boundaries(parts + 1, corpus.num_walks());
  boundaries[0] = 0;
  for (unsigned t = 1; t < parts; ++t) {
    const uint64_t target = corpus.num_tokens() * t / parts;
    const auto it = std::lower_bound(offsets.begin(), offsets.end() - 1, target);
    boundaries[t] = std::max(boundaries[t - 1], static_cast<size_t>(it - offsets.begin()));
  }
  return boundaries;
}

}  // namespace

uint32_t EpochsFor(const WalkCorpus& corpus, const SkipGramOptions& options) {
  return options.epochs != 0 ? options.epochs : AutoEpochs(MeasureCoverage(corpus));
}

SkipGramModel InitializeModel(uint32_t num_vertices, const SkipGramOptions& options) {
  SkipGramModel model(num_vertices, options.dim);
  FastRng rng(StreamSeed(options.seed, kInitStream));
  for (uint32_t v = 0; v < num_vertices; ++v) {
    for (float& x : model.MutableEmbedding(v)) {
      x = static_cast<float>((2 * rng.Uniform() - 1) * options.init_range / options.dim);
    }
  }
  return model;
}

std::optional<SkipGramModel> Train(const WalkCorpus& corpus, const SkipGramOptions& options,
                                   const SkipGramProgress& progress, std::string* error) {
  auto fail = [error](std::string message) -> std::optional<SkipGramModel> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  if (std::string problem = ValidateSkipGramOptions(options); !problem.empty()) return fail(problem);
  if (corpus.num_tokens() == 0) return fail("the walk corpus has no token");
  const std::optional<NegativeSampler> sampler = NegativeSampler::FromCounts(corpus.counts());
  if (!sampler) return fail("no negative-sampling distribution for this corpus");

  SkipGramModel model = InitializeModel(corpus.num_vertices(), options);
  const SigmoidTable sigmoid;
  const std::vector<double> keep = KeepProbabilities(corpus, options.sample);
  const bool subsample = options.sample > 0;
  const unsigned threads = options.threads == 0 ? std::max(1u, std::thread::hardware_concurrency())
                                                : options.threads;
  const std::vector<size_t> boundaries = SplitByTokens(corpus, threads);
  const uint32_t epochs = EpochsFor(corpus, options);
  const uint64_t total = uint64_t{epochs} * corpus.num_tokens();

  internal::SkipGramKernel kernel;
  kernel.input = model.input.data();
  kernel.output = model.output.data();
  kernel.stride = model.stride;
  kernel.window = options.window;
  kernel.negative = options.negative;
  kernel.dynamic_window = options.dynamic_window;
  kernel.sigmoid = &sigmoid;
  kernel.sampler = &*sampler;

  // All scratch is allocated here, so workers never allocate.
  struct Scratch {
    AlignedFloats gradient;
    std::vector<uint32_t> targets;
    std::vector<uint32_t> kept;
  };
  std::vector<Scratch> scratch(threads);
  for (Scratch& s : scratch) {
    s.gradient.assign(model.stride, 0.0f);
    s.targets.resize(options.negative);
    if (subsample) s.kept.resize(corpus.max_walk_length());
  }

  std::atomic<uint64_t> done{0};

  auto work = [&](unsigned t) {
    FastRng rng(StreamSeed(options.seed, 1 + uint64_t{t}));
    Scratch& mine = scratch[t];
    const internal::KernelScratch kernel_scratch{mine.gradient.data(), mine.targets.data()};
    float alpha = options.alpha;
    uint64_t pending = 0;
    for (uint32_t epoch = 0; epoch < epochs; ++epoch) {
      for (size_t w = boundaries[t]; w < boundaries[t + 1]; ++w) {
        const std::span<const uint32_t> walk = corpus.Walk(w);
        const uint32_t* tokens = walk.data();
        uint32_t length = static_cast<uint32_t>(walk.size());
        if (subsample) {
          length = 0;
          for (uint32_t v : walk) {
            if (keep[v] >= 1.0 || rng.Uniform() < keep[v]) mine.kept[length++] = v;
          }
          tokens = mine.kept.data();
        }
        internal::TrainWalk(kernel, tokens, length, alpha, rng, kernel_scratch);
        pending += walk.size();
        if (pending >= kTokensPerUpdate) {
          const uint64_t now = done.fetch_add(pending, std::memory_order_relaxed) + pending;
          pending = 0;
          alpha = LinearLearningRate(options.alpha, options.min_alpha, now, total);
        }
      }
    }
    done.fetch_add(pending, std::memory_order_relaxed);
  };

  RunWorkersWithProgress(threads, work, done, total, progress);
  return model;
}

}  // namespace nodefl::server::fedwalk
