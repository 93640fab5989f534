// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// word2vec text embeddings: exact round trip, gensim's layout, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "test_support.h"

namespace nodefl::server::fedwalk {
namespace {

TEST(Word2VecTextTest, RoundTripIsBitExact) {
  const TempDir dir;
  SkipGramModel model(7, 5);  // stride 16: rows carry padding the file must not show
  ASSERT_EQ(model.stride, 16u);
  FastRng rng(5);
  for (uint32_t v = 0; v < 7; ++v) {
    for (float& x : model.MutableEmbedding(v)) {
      x = static_cast<float>((rng.Uniform() - 0.5) * std::pow(10.0, static_cast<int>(rng.Below(20)) - 10));
    }
  }
  model.MutableEmbedding(3)[0] = 0.1f;
  model.MutableEmbedding(3)[1] = -0.0f;
  std::string error;
  ASSERT_TRUE(model.WriteWord2VecText(dir / "e.emb", &error)) << error;
  const std::string text = dir.Read("e.emb");
  EXPECT_EQ(text.substr(0, 4), "7 5\n");
  EXPECT_TRUE(Contains(text, "\n3 0.1 -0 ")) << text;

  std::vector<bool> present;
  const auto read = ReadWord2VecText(dir / "e.emb", &error, &present);
  ASSERT_TRUE(read.has_value()) << error;
  EXPECT_EQ(read->num_vertices, 7u);
  EXPECT_EQ(read->dim, 5u);
  EXPECT_EQ(present, std::vector<bool>(7, true));
  for (uint32_t v = 0; v < 7; ++v) {
    EXPECT_EQ(std::memcmp(read->Embedding(v).data(), model.Embedding(v).data(), 5 * sizeof(float)), 0) << v;
  }
}

// gensim writes rows in its own (frequency) order, can leave out vertices
// no walk visited, and word2vec.c ends each value with a space.
TEST(Word2VecTextTest, ReadsGensimLayout) {
  const TempDir dir;
  dir.Write("g.emb", "3 2\n4 0.5 -1.25 \n0 1e-3 2\n2 3 4\n");
  std::string error;
  std::vector<bool> present;
  const auto read = ReadWord2VecText(dir / "g.emb", &error, &present);
  ASSERT_TRUE(read.has_value()) << error;
  EXPECT_EQ(read->num_vertices, 5u);
  EXPECT_EQ(present, (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(read->Embedding(4)[1], -1.25f);
  EXPECT_EQ(read->Embedding(0)[0], 1e-3f);
  EXPECT_EQ(read->Embedding(1)[0], 0.0f);
}

TEST(Word2VecTextTest, ReportsMalformedFilesWithLineNumbers) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"", "e.emb:1: empty file"},
      {"2\n", "e.emb:1: header must be 'N d'"},
      {"2 2\n0 1 2\n1 1\n", "e.emb:3: expected a vertex id and 2 values, got 2 fields"},
      {"2 2\n0 1 2\n", "e.emb:3: expected 2 vector lines, file ends"},
      {"2 2\n0 1 2\nx 1 2\n", "e.emb:3: token 'x' is not a vertex id"},
      {"2 2\n0 1 2\n1 1 y\n", "e.emb:3: value 2 'y' is not a finite number"},
      {"2 2\n0 1 2\n1 1 nan\n", "e.emb:3: value 2 'nan' is not a finite number"},
      {"2 2\n0 1 2\n0 3 4\n", "e.emb:3: vertex 0 is listed twice"},
      {"1 2\n0 1 2\n1 3 4\n", "e.emb:3: unexpected line"},
  };
  const TempDir dir;
  for (const Case& c : cases) {
    dir.Write("e.emb", c.text);
    std::string error;
    EXPECT_FALSE(ReadWord2VecText(dir / "e.emb", &error).has_value()) << c.text;
    EXPECT_TRUE(Contains(error, c.expected)) << c.text;
  }
}

}  // namespace
}  // namespace nodefl::server::fedwalk
