// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// WalkCorpus and the text walk file: round trips, tolerated layout, and
// every malformed input reported with its line.
#include "nodefl/server/fedwalk/skipgram/walk_file.h"

#include <gtest/gtest.h>

#include <vector>

#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"
#include "test_support.h"

namespace nodefl::server::fedwalk {
namespace {

std::vector<std::vector<uint32_t>> AllWalks(const WalkCorpus& corpus) {
  std::vector<std::vector<uint32_t>> walks;
  for (size_t i = 0; i < corpus.num_walks(); ++i) walks.emplace_back(corpus.Walk(i).begin(), corpus.Walk(i).end());
  return walks;
}

TEST(WalkCorpusTest, AddWalkKeepsCsrAndCounts) {
  WalkCorpus corpus(6);
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{0, 1, 2, 1}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{5}));
  std::string error;
  EXPECT_FALSE(corpus.AddWalk(std::vector<uint32_t>{3, 6}, &error));
  EXPECT_TRUE(Contains(error, "vertex 6, not below the vertex count 6"));
  EXPECT_EQ(corpus.num_walks(), 3u);
  EXPECT_EQ(corpus.num_tokens(), 5u);
  EXPECT_EQ(corpus.max_walk_length(), 4u);
  EXPECT_EQ(corpus.offsets(), (std::vector<uint64_t>{0, 4, 4, 5}));
  EXPECT_EQ(corpus.counts(), (std::vector<uint64_t>{1, 2, 1, 0, 0, 1}));
  EXPECT_EQ(AllWalks(corpus), (std::vector<std::vector<uint32_t>>{{0, 1, 2, 1}, {}, {5}}));
}

TEST(WalkCorpusTest, FromCsrValidates) {
  std::string error;
  auto ok = WalkCorpus::FromCsr(4, {0, 1, 3, 3}, {0, 2, 4}, &error);
  ASSERT_TRUE(ok.has_value()) << error;
  EXPECT_EQ(ok->counts(), (std::vector<uint64_t>{1, 1, 0, 2}));
  EXPECT_FALSE(WalkCorpus::FromCsr(4, {0, 1}, {0, 3}, &error).has_value());
  EXPECT_FALSE(WalkCorpus::FromCsr(4, {0, 1}, {1, 2}, &error).has_value());
  EXPECT_FALSE(WalkCorpus::FromCsr(4, {0, 1, 2}, {0, 2, 1, 3}, &error).has_value());
  EXPECT_TRUE(Contains(error, "decrease"));
  EXPECT_FALSE(WalkCorpus::FromCsr(4, {0, 4}, {0, 2}, &error).has_value());
  EXPECT_TRUE(Contains(error, "vertex 4"));
}

TEST(WalkFileTest, RoundTripIsExact) {
  const TempDir dir;
  WalkCorpus corpus(1000);
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{0, 999, 10, 0}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{}));
  ASSERT_TRUE(corpus.AddWalk(std::vector<uint32_t>{42}));
  std::string error;
  ASSERT_TRUE(SaveWalkFile(corpus, dir / "walks.txt", &error)) << error;
  EXPECT_EQ(dir.Read("walks.txt"), "0 999 10 0\n\n42\n");
  const auto loaded = LoadWalkFile(dir / "walks.txt", 1000, &error);
  ASSERT_TRUE(loaded.has_value()) << error;
  EXPECT_EQ(AllWalks(*loaded), AllWalks(corpus));
  EXPECT_EQ(loaded->counts(), corpus.counts());
}

TEST(WalkFileTest, ToleratesWhitespaceLikeLineSentence) {
  std::string error;
  const auto corpus = ParseWalkText("  3\t 1   2 \r\n\r\n4", 5, "w", &error);
  ASSERT_TRUE(corpus.has_value()) << error;
  EXPECT_EQ(AllWalks(*corpus), (std::vector<std::vector<uint32_t>>{{3, 1, 2}, {}, {4}}));
}

TEST(WalkFileTest, ReportsBadInputWithLineNumbers) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"0 1\n2 x 3\n", "walks.txt:2: token 'x' is not a vertex id"},
      {"0 1\n2 3\n4 10\n", "walks.txt:3: vertex id '10' is not below the vertex count 10"},
      {"-1 2\n", "walks.txt:1: token '-1' is not a vertex id"},
      {"1\n\n\n12abc\n", "walks.txt:4: token '12abc' is not a vertex id"},
      {"+5\n", "walks.txt:1: token '+5'"},
      {"1 2.5\n", "walks.txt:1: token '2.5'"},
      {"1\n99999999999999999999999\n", "walks.txt:2: vertex id '99999999999999999999999' is not below"},
  };
  const TempDir dir;
  for (const Case& c : cases) {
    dir.Write("walks.txt", c.text);
    std::string error;
    EXPECT_FALSE(LoadWalkFile(dir / "walks.txt", 10, &error).has_value()) << c.text;
    EXPECT_TRUE(Contains(error, c.expected)) << c.text;
  }
  std::string error;
  EXPECT_FALSE(LoadWalkFile(dir / "missing.txt", 10, &error).has_value());
  EXPECT_TRUE(Contains(error, "missing.txt: cannot open"));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
