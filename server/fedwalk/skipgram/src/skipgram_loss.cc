// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// EstimateLoss: the training objective measured on sampled pairs, exactly,
// so tests can see training make progress independently of the kernel's
// sigmoid table.
#include <algorithm>
#include <cmath>
#include <limits>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/negative_sampler.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"

namespace nodefl::server::fedwalk {

namespace {

// -log sigma(z), stable for large |z|.
double NegLogSigmoid(double z) { return z >= 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z)); }

double DotDouble(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

double EstimateLoss(const SkipGramModel& model, const WalkCorpus& corpus, const SkipGramOptions& options,
                    uint64_t pairs, uint64_t seed) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (model.num_vertices != corpus.num_vertices() || model.output.size() != model.input.size() ||
      corpus.max_walk_length() < 2 || pairs == 0 || options.window == 0) {
    return kNaN;
  }
  const std::optional<NegativeSampler> sampler = NegativeSampler::FromCounts(corpus.counts());
  if (!sampler) return kNaN;
  const std::vector<uint64_t>& offsets = corpus.offsets();
  FastRng rng(seed);
  double total = 0;
  for (uint64_t p = 0; p < pairs; ++p) {
    // A uniform token; tokens of one-token walks have no context, so draw
    // again (the corpus has a longer walk, so this ends).
    uint64_t token = 0;
    size_t walk = 0;
    do {
      token = std::min(corpus.num_tokens() - 1,
                       static_cast<uint64_t>(rng.Uniform() * static_cast<double>(corpus.num_tokens())));
      walk = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), token) - offsets.begin()) - 1;
    } while (offsets[walk + 1] - offsets[walk] < 2);
    const uint64_t begin = offsets[walk];
    const uint64_t end = offsets[walk + 1];
    const uint64_t first = std::max(begin, token >= options.window ? token - options.window : 0);
    const uint64_t last = std::min(end - 1, token + options.window);
    // Uniform over [first, last] without `token` itself.
    uint64_t other =
        first + std::min(last - first - 1, static_cast<uint64_t>(rng.Uniform() * static_cast<double>(last - first)));
    if (other >= token) ++other;
    const uint32_t centre = corpus.tokens()[token];
    const uint32_t context = corpus.tokens()[other];
    const std::span<const float> in = model.Embedding(centre);
    double loss = NegLogSigmoid(DotDouble(in, model.ContextVector(context)));
    for (uint32_t k = 0; k < options.negative; ++k) {
      const uint32_t negative = sampler->Sample(rng);
      if (negative == context) continue;
      loss += NegLogSigmoid(-DotDouble(in, model.ContextVector(negative)));
    }
    total += loss;
  }
  return total / static_cast<double>(pairs);
}

}  // namespace nodefl::server::fedwalk
