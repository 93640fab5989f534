// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace nodefl::server::fedwalk {
namespace {

TEST(FeatureStoreTest, RejectsOutOfRangeShapes) {
  EXPECT_FALSE(FeatureStore::OrderedMatrices(0).ok());
  EXPECT_FALSE(FeatureStore::OrderedMatrices(17).ok());
  EXPECT_TRUE(FeatureStore::OrderedMatrices(16).ok());
  EXPECT_FALSE(FeatureStore::Histograms(0, 16).ok());
  EXPECT_FALSE(FeatureStore::Histograms(4, 1).ok());
  EXPECT_FALSE(FeatureStore::Histograms(4, 25).ok());
  EXPECT_TRUE(FeatureStore::Histograms(16, 24).ok());
}

TEST(FeatureStoreTest, KeepsMatricesColumnMajorWithZeroPadding) {
  FeatureStore store = FeatureStore::OrderedMatrices(3).value();
  // Vertex 0: 2 rows (1,2,3) (4,5,6); vertex 1: none; vertex 2: 9 rows.
  ASSERT_TRUE(store.AddOrderedMatrix(std::vector<float>{1, 2, 3, 4, 5, 6}, 2).ok());
  ASSERT_TRUE(store.AddOrderedMatrix(std::vector<float>{}, 0).ok());
  std::vector<float> nine(27);
  for (size_t i = 0; i < nine.size(); ++i) nine[i] = static_cast<float>(i) - 10.5f;
  ASSERT_TRUE(store.AddOrderedMatrix(nine, 9).ok());

  ASSERT_EQ(store.size(), 3u);
  EXPECT_EQ(store.rows(0), 2u);
  EXPECT_EQ(store.rows(1), 0u);
  EXPECT_EQ(store.rows(2), 9u);
  EXPECT_EQ(store.total_rows(), 11u);

  // Layout: 8 guard zeros, then k columns of pitch = roundup(rows, 8) + 8.
  const OrderedMatrixView m0 = store.matrix(0);
  EXPECT_EQ(m0.pitch, 16u);
  EXPECT_EQ(m0.at(0, 0), 1.0f);
  EXPECT_EQ(m0.at(1, 0), 4.0f);
  EXPECT_EQ(m0.at(0, 1), 2.0f);
  EXPECT_EQ(m0.at(1, 2), 6.0f);
  EXPECT_EQ(m0.columns[16], 2.0f);  // column 1 starts one pitch after column 0
  // Every column has at least 8 zero rows before and after it.
  for (uint32_t c = 0; c < 3; ++c) {
    for (int r = -8; r < 0; ++r) EXPECT_EQ(m0.columns[static_cast<int>(c * 16) + r], 0.0f);
    for (uint32_t r = 2; r < 16; ++r) EXPECT_EQ(m0.columns[c * 16 + r], 0.0f);
  }
  EXPECT_EQ(store.matrix(1).rows, 0u);  // an empty matrix takes no space
  const OrderedMatrixView m2 = store.matrix(2);
  EXPECT_EQ(m2.pitch, 24u);
  EXPECT_EQ(m2.at(8, 2), nine[8 * 3 + 2]);
  EXPECT_EQ(m2.at(4, 1), nine[4 * 3 + 1]);
  for (int r = -8; r < 0; ++r) EXPECT_EQ(m2.columns[r], 0.0f);
  for (uint32_t r = 9; r < 24; ++r) EXPECT_EQ(m2.columns[2 * 24 + r], 0.0f);
  EXPECT_EQ(m2.columns + 2 * 24 + 24, m0.columns - 8 + OrderedMatrixFloats(2, 3) + OrderedMatrixFloats(9, 3))
      << "vertex 2 ends where the store's floats end";
  EXPECT_EQ(OrderedMatrixFloats(2, 3), 8u + 3 * 16);
  EXPECT_EQ(OrderedMatrixFloats(9, 3), 8u + 3 * 24);
  EXPECT_EQ(OrderedMatrixFloats(0, 3), 0u);
  EXPECT_GE(store.bytes(), (OrderedMatrixFloats(2, 3) + OrderedMatrixFloats(9, 3)) * sizeof(float));
}

TEST(FeatureStoreTest, RejectsBadMatrices) {
  FeatureStore store = FeatureStore::OrderedMatrices(2).value();
  EXPECT_FALSE(store.AddOrderedMatrix(std::vector<float>{1, 2, 3}, 2).ok());  // size != rows * k
  EXPECT_FALSE(store.AddOrderedMatrix(std::vector<float>{1, std::nanf("")}, 1).ok());
  EXPECT_FALSE(store.AddOrderedMatrix(std::vector<float>{std::numeric_limits<float>::infinity(), 0}, 1).ok());
  EXPECT_FALSE(store.AddOrderedMatrix(std::vector<float>{0, -2.0f * kMaxMatrixValue}, 1).ok());
  EXPECT_TRUE(store.AddOrderedMatrix(std::vector<float>{kMaxMatrixValue, -kMaxMatrixValue}, 1).ok());
  EXPECT_FALSE(store.AddHistogram(std::vector<int32_t>{1, 2}).ok());  // wrong kind
  EXPECT_EQ(store.size(), 1u);  // only the valid one; nothing half-added
  EXPECT_EQ(store.total_rows(), 1u);
}

TEST(FeatureStoreTest, KeepsHistogramsRowMajor) {
  FeatureStore store = FeatureStore::Histograms(2, 3).value();
  ASSERT_TRUE(store.AddHistogram(std::vector<int32_t>{1, 2, 3, 4, 5, 6}).ok());
  ASSERT_TRUE(store.AddHistogram(std::vector<int32_t>{-1, 0, 7, 8, 9, 10}).ok());
  EXPECT_FALSE(store.AddHistogram(std::vector<int32_t>{1, 2, 3}).ok());
  EXPECT_FALSE(store.AddOrderedMatrix(std::vector<float>{1, 2}, 1).ok());
  ASSERT_EQ(store.size(), 2u);
  EXPECT_EQ(store.rows(1), 0u);
  EXPECT_EQ(store.histogram(0)[5], 6);
  EXPECT_EQ(store.histogram(1)[0], -1);
  EXPECT_EQ(store.histogram(1)[3], 8);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
