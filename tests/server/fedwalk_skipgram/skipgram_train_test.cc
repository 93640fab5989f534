// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The trainer: initial model, progress of the loss, determinism, options.
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "test_support.h"

namespace nodefl::server::fedwalk {
namespace {

// Walks on a ring of n vertices that step +-1: a corpus whose structure
// (who co-occurs with whom) SkipGram can learn quickly.
WalkCorpus RingWalks(uint32_t n, uint32_t walks, uint32_t length, uint64_t seed) {
  WalkCorpus corpus(n);
  FastRng rng(seed);
  std::vector<uint32_t> walk(length);
  for (uint32_t w = 0; w < walks; ++w) {
    walk[0] = rng.Below(n);
    for (uint32_t k = 1; k < length; ++k) walk[k] = (walk[k - 1] + (rng.Below(2) == 0 ? 1 : n - 1)) % n;
    EXPECT_TRUE(corpus.AddWalk(walk));
  }
  return corpus;
}

SkipGramOptions SmallOptions() {
  SkipGramOptions o;
  o.dim = 24;
  o.window = 3;
  o.negative = 5;
  o.epochs = 3;
  o.threads = 1;
  o.seed = 17;
  return o;
}

TEST(SkipGramTrainTest, InitialModelIsTheStandardOne) {
  for (const float range : {0.5f, 1.0f}) {  // word2vec.c's (the default), gensim 4's
    SkipGramOptions o = SmallOptions();
    o.dim = 20;  // stride 32: 12 padding floats per row
    o.init_range = range;
    const SkipGramModel model = InitializeModel(50, o);
    ASSERT_EQ(model.stride, 32u);
    double sum = 0, sum2 = 0, max_abs = 0;
    for (uint32_t v = 0; v < 50; ++v) {
      for (uint32_t k = 0; k < model.stride; ++k) {
        const float x = model.input[v * model.stride + k];
        if (k >= o.dim) {
          ASSERT_EQ(x, 0.0f);
        } else {
          sum += x;
          sum2 += static_cast<double>(x) * x;
          max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
        }
        ASSERT_EQ(model.output[v * model.stride + k], 0.0f);
      }
    }
    const double bound = range / o.dim;
    EXPECT_LE(max_abs, bound);
    EXPECT_GT(max_abs, 0.99 * bound) << "1000 uniform values should come near the bound";
    // 1000 values uniform on [-b, b): mean 0 with sd b/sqrt(3000); mean
    // square b^2/3 with sd about 0.3 b^2/sqrt(1000) (5 sd either way).
    EXPECT_NEAR(sum / 1000, 0.0, 5 * bound / std::sqrt(3000.0));
    EXPECT_NEAR(sum2 / 1000, bound * bound / 3, 5 * 0.3 * bound * bound / std::sqrt(1000.0));
  }
}

TEST(SkipGramTrainTest, UntrainedLossIsLogTwoPerTerm) {
  const WalkCorpus corpus = RingWalks(200, 300, 20, 1);
  const SkipGramOptions o = SmallOptions();
  const double loss = EstimateLoss(InitializeModel(200, o), corpus, o, 20000, 3);
  // Every term is log 2 with zero output vectors; a negative equal to the
  // context (probability ~1/200 each) is skipped, so slightly less.
  const double full = (1 + o.negative) * std::numbers::ln2;
  EXPECT_LE(loss, full + 1e-9);
  EXPECT_GT(loss, full * (1 - 3.0 / 200));
}

TEST(SkipGramTrainTest, TrainingReducesTheLossDeterministically) {
  const WalkCorpus corpus = RingWalks(200, 300, 20, 1);
  const SkipGramOptions o = SmallOptions();
  const double before = EstimateLoss(InitializeModel(200, o), corpus, o, 20000, 3);
  std::string error;
  const auto model = Train(corpus, o, {}, &error);
  ASSERT_TRUE(model.has_value()) << error;
  const double after = EstimateLoss(*model, corpus, o, 20000, 3);
  EXPECT_LT(after, 0.6 * before) << "before " << before << " after " << after;

  // One thread: the same seed gives the same bits.
  const auto again = Train(corpus, o, {}, &error);
  ASSERT_TRUE(again.has_value()) << error;
  EXPECT_EQ(std::memcmp(model->input.data(), again->input.data(), model->input.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(model->output.data(), again->output.data(), model->output.size() * sizeof(float)), 0);
  SkipGramOptions other = o;
  other.seed = 18;
  const auto different = Train(corpus, other, {}, &error);
  ASSERT_TRUE(different.has_value()) << error;
  EXPECT_NE(std::memcmp(model->input.data(), different->input.data(), model->input.size() * sizeof(float)), 0);
}

// Neighbours on the ring end up more similar than opposite vertices. (The
// corpus is larger than above: with ~30 tokens per vertex all vectors still
// share one common direction and every cosine is high.)
TEST(SkipGramTrainTest, RingNeighboursAreCloserThanOppositeVertices) {
  const WalkCorpus corpus = RingWalks(200, 1000, 20, 1);
  std::string error;
  const auto model = Train(corpus, SmallOptions(), {}, &error);
  ASSERT_TRUE(model.has_value()) << error;
  auto cosine = [&](uint32_t a, uint32_t b) {
    double ab = 0, aa = 0, bb = 0;
    for (uint32_t k = 0; k < model->dim; ++k) {
      ab += model->Embedding(a)[k] * model->Embedding(b)[k];
      aa += model->Embedding(a)[k] * model->Embedding(a)[k];
      bb += model->Embedding(b)[k] * model->Embedding(b)[k];
    }
    return ab / std::sqrt(aa * bb);
  };
  double near = 0, far = 0;
  uint32_t closer = 0;
  for (uint32_t v = 0; v < 200; ++v) {
    const double a = cosine(v, (v + 1) % 200), b = cosine(v, (v + 100) % 200);
    near += a;
    far += b;
    closer += a > b;
  }
  EXPECT_GT(near / 200, far / 200 + 0.3) << "near " << near / 200 << " far " << far / 200;
  // Embeddings blind to the ring would make about half the vertices closer
  // to their neighbour; 190 of 200 is 12.7 binomial sd above that.
  EXPECT_GE(closer, 190u);
}

TEST(SkipGramTrainTest, SeveralThreadsAndSubsamplingStillLearn) {
  const WalkCorpus corpus = RingWalks(200, 300, 20, 1);
  SkipGramOptions o = SmallOptions();
  o.threads = 3;
  o.sample = 1e-3;
  o.dynamic_window = false;
  o.dim = 10;  // padded rows
  const double before = EstimateLoss(InitializeModel(200, o), corpus, o, 20000, 3);
  uint64_t last_done = 0, calls = 0;
  bool monotone = true;
  std::string error;
  const auto model = Train(
      corpus, o,
      [&](uint64_t done, uint64_t total) {
        monotone = monotone && done >= last_done && done <= total;
        last_done = done;
        ++calls;
        EXPECT_EQ(total, 3 * corpus.num_tokens());
      },
      &error);
  ASSERT_TRUE(model.has_value()) << error;
  EXPECT_TRUE(monotone);
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_done, 3 * corpus.num_tokens());
  EXPECT_LT(EstimateLoss(*model, corpus, o, 20000, 3), 0.7 * before);
  for (uint32_t v = 0; v < 200; ++v) {
    for (uint32_t k = o.dim; k < model->stride; ++k) {
      ASSERT_EQ(model->input[v * model->stride + k], 0.0f);
      ASSERT_EQ(model->output[v * model->stride + k], 0.0f);
    }
  }
}

TEST(SkipGramTrainTest, RejectsBadOptionsAndEmptyCorpora) {
  const WalkCorpus corpus = RingWalks(20, 5, 5, 1);
  std::string error;
  SkipGramOptions o = SmallOptions();
  o.dim = 0;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  EXPECT_TRUE(Contains(error, "dim"));
  o = SmallOptions();
  o.min_alpha = 0.5f;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  EXPECT_TRUE(Contains(error, "min_alpha"));
  o = SmallOptions();
  o.negative = 0;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  o = SmallOptions();
  o.sample = -1;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  o = SmallOptions();
  o.init_range = -1;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  EXPECT_TRUE(Contains(error, "init_range"));
  o = SmallOptions();
  o.epochs = 100001;
  EXPECT_FALSE(Train(corpus, o, {}, &error).has_value());
  EXPECT_TRUE(Contains(error, "epochs"));
  WalkCorpus empty(20);
  ASSERT_TRUE(empty.AddWalk(std::vector<uint32_t>{}));
  EXPECT_FALSE(Train(empty, SmallOptions(), {}, &error).has_value());
  EXPECT_TRUE(Contains(error, "no token"));
  EXPECT_TRUE(std::isnan(EstimateLoss(InitializeModel(20, SmallOptions()), empty, SmallOptions(), 10, 1)));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
