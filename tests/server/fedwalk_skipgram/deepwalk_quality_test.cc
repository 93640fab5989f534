// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// End to end: DeepWalk embeddings of a planted-partition graph separate the
// communities. Thresholds come from null distributions (what embeddings
// unrelated to the communities would score), not from a tuned run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/fedwalk/deepwalk/deepwalk_walks.h"
#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "stat_util.h"

namespace nodefl::server::fedwalk {
namespace {

constexpr uint32_t kCommunities = 4;
constexpr uint32_t kBlock = 40;
constexpr uint32_t kNodes = kCommunities * kBlock;

class DeepWalkQualityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new nodefl::dataset::Graph(
        nodefl::dataset::GeneratePlantedPartition(kCommunities, kBlock, 0.25, 0.01, 2024));
    DeepWalkOptions walks;
    walks.walks_per_vertex = 10;
    walks.walk_length = 20;
    walks.threads = 1;
    walks.seed = 5;
    const auto corpus = GenerateDeepWalks(*graph_, walks);
    ASSERT_TRUE(corpus.has_value());
    SkipGramOptions o;
    o.dim = 32;
    o.window = 5;
    o.epochs = 3;
    o.threads = 1;
    o.seed = 5;
    auto model = Train(*corpus, o);
    ASSERT_TRUE(model.has_value());
    // Unit vectors, so dot products are cosines.
    unit_ = new std::vector<std::vector<double>>(kNodes);
    for (uint32_t v = 0; v < kNodes; ++v) {
      const auto e = model->Embedding(v);
      double norm = 0;
      for (float x : e) norm += double{x} * x;
      for (float x : e) (*unit_)[v].push_back(x / std::sqrt(norm));
    }
  }
  static void TearDownTestSuite() {
    delete graph_;
    delete unit_;
  }

  static double Dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
    return s;
  }
  static uint32_t Community(uint32_t v) { return graph_->labels[graph_->label_offsets[v]]; }

  static nodefl::dataset::Graph* graph_;
  static std::vector<std::vector<double>>* unit_;
};

nodefl::dataset::Graph* DeepWalkQualityTest::graph_ = nullptr;
std::vector<std::vector<double>>* DeepWalkQualityTest::unit_ = nullptr;

// Mean cosine of same-community pairs minus that of cross pairs, for a
// labelling.
double SimilarityGap(const std::vector<std::vector<double>>& cos, const std::vector<uint32_t>& label) {
  double same = 0, cross = 0;
  uint64_t n_same = 0, n_cross = 0;
  for (uint32_t u = 0; u < kNodes; ++u) {
    for (uint32_t v = u + 1; v < kNodes; ++v) {
      if (label[u] == label[v]) {
        same += cos[u][v];
        ++n_same;
      } else {
        cross += cos[u][v];
        ++n_cross;
      }
    }
  }
  return same / static_cast<double>(n_same) - cross / static_cast<double>(n_cross);
}

// The observed same-minus-cross gap against the gaps of random relabellings
// (a permutation test): embeddings that ignored the communities would put
// the true gap inside that null distribution. We require it to lie beyond
// the null mean by ZBound(1e-6) null standard deviations, and also to be a
// clear gap in absolute terms.
TEST_F(DeepWalkQualityTest, SameCommunityPairsAreMoreSimilar) {
  std::vector<std::vector<double>> cos(kNodes, std::vector<double>(kNodes));
  for (uint32_t u = 0; u < kNodes; ++u) {
    for (uint32_t v = 0; v < kNodes; ++v) cos[u][v] = Dot((*unit_)[u], (*unit_)[v]);
  }
  std::vector<uint32_t> label(kNodes);
  for (uint32_t v = 0; v < kNodes; ++v) label[v] = Community(v);
  const double gap = SimilarityGap(cos, label);

  constexpr int kPermutations = 200;
  FastRng rng(99);
  double sum = 0, sum_sq = 0;
  std::vector<uint32_t> shuffled = label;
  for (int p = 0; p < kPermutations; ++p) {
    for (uint32_t i = kNodes; i > 1; --i) std::swap(shuffled[i - 1], shuffled[rng.Below(i)]);
    const double g = SimilarityGap(cos, shuffled);
    sum += g;
    sum_sq += g * g;
  }
  const double mean = sum / kPermutations;
  const double sd = std::sqrt(std::max(0.0, sum_sq / kPermutations - mean * mean));
  RecordProperty("gap", std::to_string(gap));
  RecordProperty("null_sd", std::to_string(sd));
  EXPECT_GT(gap, mean + testing::ZBound() * sd) << "gap " << gap << " null mean " << mean << " sd " << sd;
  EXPECT_GT(gap, 0.2) << "gap " << gap;
}

// Centroids from the even vertices classify the odd ones. Under the null
// (embeddings unrelated to communities) each of the m = 80 test vertices is
// right with probability 1/4, so accuracy above 1/4 + z sqrt(3/16 / m),
// z the one-sided 1e-6 normal quantile (0.48 here), would happen by chance
// with probability below 1e-6.
TEST_F(DeepWalkQualityTest, NearestCentroidBeatsChanceClearly) {
  std::vector<std::vector<double>> centroid(kCommunities, std::vector<double>((*unit_)[0].size(), 0.0));
  for (uint32_t v = 0; v < kNodes; v += 2) {
    for (size_t k = 0; k < centroid[0].size(); ++k) centroid[Community(v)][k] += (*unit_)[v][k];
  }
  uint32_t right = 0, tested = 0;
  for (uint32_t v = 1; v < kNodes; v += 2) {
    uint32_t best = 0;
    double best_score = -INFINITY;
    for (uint32_t c = 0; c < kCommunities; ++c) {
      const double norm = std::sqrt(Dot(centroid[c], centroid[c]));
      const double score = Dot((*unit_)[v], centroid[c]) / norm;
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    right += best == Community(v);
    ++tested;
  }
  const double chance = 1.0 / kCommunities;
  const double threshold =
      chance + testing::NormalQuantile(1 - testing::kAlpha) * std::sqrt(chance * (1 - chance) / tested);
  const double accuracy = static_cast<double>(right) / tested;
  RecordProperty("accuracy", std::to_string(accuracy));
  RecordProperty("threshold", std::to_string(threshold));
  EXPECT_GT(accuracy, threshold) << right << " of " << tested;
}

}  // namespace
}  // namespace nodefl::server::fedwalk
