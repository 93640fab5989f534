// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/dataset/graph_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace nodefl::dataset {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("nodefl_dataset_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(GraphDatasetTest, LoadsKarateFromSharedDatasets) {
  const fs::path karate = fs::path(NODEFL_DATASETS_DIR) / "karate";
  ASSERT_TRUE(fs::exists(karate / "edges.tsv")) << "shared datasets not found at " << karate;
  LoadResult r = LoadGraph(karate);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.graph.num_nodes, 34u);
  EXPECT_EQ(r.graph.num_edges, 78u);
  EXPECT_EQ(r.graph.neighbours.size(), 156u);
  EXPECT_EQ(r.graph.degree(33), 17u);  // the officer's hub
  EXPECT_EQ(r.graph.degree(0), 16u);   // Mr. Hi
  EXPECT_EQ(r.graph.num_label_classes, 2u);
  EXPECT_EQ(r.graph.num_feature_dims, 0u);
}

TEST(GraphDatasetTest, BuildsSymmetricSortedAdjacencyAndFeatures) {
  TempDir dir;
  dir.Write("edges.tsv", "0\t2\n1\t2\r\n0\t3\n");
  dir.Write("labels.tsv", "0\t1\n0\t4\n3\t0\n");
  dir.Write("features.tsv", "2\t7\n2\t1\n");
  LoadResult r = LoadGraph(dir.path());
  ASSERT_TRUE(r.ok) << r.error;
  const Graph& g = r.graph;
  EXPECT_EQ(g.num_nodes, 4u);
  ASSERT_EQ(g.degree(0), 2u);
  EXPECT_EQ(g.neighbours[g.offsets[0]], 2u);
  EXPECT_EQ(g.neighbours[g.offsets[0] + 1], 3u);
  EXPECT_EQ(g.degree(2), 2u);
  EXPECT_EQ(g.label_offsets[1] - g.label_offsets[0], 2u);  // multi-label node 0
  EXPECT_EQ(g.num_label_classes, 5u);
  EXPECT_EQ(g.num_feature_dims, 8u);
  EXPECT_EQ(g.features[g.feature_offsets[2]], 1u);  // sorted
}

TEST(GraphDatasetTest, ReportsMalformedInputWithLocation) {
  TempDir dir;
  dir.Write("edges.tsv", "0\t1\n1 2\n");
  LoadResult r = LoadGraph(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("edges.tsv:2:"), std::string::npos) << r.error;

  dir.Write("edges.tsv", "0\t1\n1\t1\n");
  r = LoadGraph(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("self loop"), std::string::npos) << r.error;

  dir.Write("edges.tsv", "0\t1\n1\t0\n");
  r = LoadGraph(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("duplicate edge"), std::string::npos) << r.error;

  dir.Write("edges.tsv", "0\t-1\n");
  r = LoadGraph(dir.path());
  EXPECT_FALSE(r.ok);

  EXPECT_FALSE(LoadGraph(dir.path() / "missing").ok);
}

TEST(GraphDatasetTest, PlantedPartitionIsDeterministicAndAssortative) {
  const Graph a = GeneratePlantedPartition(3, 20, 0.3, 0.02, 5);
  const Graph b = GeneratePlantedPartition(3, 20, 0.3, 0.02, 5);
  EXPECT_EQ(a.neighbours, b.neighbours);
  uint64_t inside = 0, across = 0;
  for (uint32_t v = 0; v < a.num_nodes; ++v) {
    for (uint64_t i = a.offsets[v]; i < a.offsets[v + 1]; ++i) {
      (a.neighbours[i] / 20 == v / 20 ? inside : across) += 1;
    }
  }
  // Expected inside ≈ 3*190*0.3*2 = 342 directed, across ≈ 3*400*0.02*2 = 48.
  EXPECT_GT(inside, 5 * across);
  EXPECT_EQ(a.num_label_classes, 3u);
}

}  // namespace
}  // namespace nodefl::dataset
