// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "random_matrices.h"

#include <gtest/gtest.h>

namespace nodefl::server::fedwalk::test {

std::vector<float> RandomMatrix(std::mt19937_64& rng, size_t rows, size_t k) {
  std::uniform_real_distribution<float> value(-5.0f, 20.0f);
  std::vector<float> m(rows * k);
  for (float& x : m) x = value(rng);
  return m;
}

FeatureStore RandomOrderedStore(std::mt19937_64& rng, uint32_t vertices, uint32_t max_rows, uint32_t k,
                                std::vector<std::vector<float>>& matrices) {
  FeatureStore store = FeatureStore::OrderedMatrices(k).value();
  std::uniform_int_distribution<uint32_t> rows(0, max_rows);
  matrices.clear();
  for (uint32_t v = 0; v < vertices; ++v) {
    const uint32_t r = rows(rng);
    matrices.push_back(RandomMatrix(rng, r, k));
    EXPECT_TRUE(store.AddOrderedMatrix(matrices.back(), r).ok());
  }
  return store;
}

FeatureStore RandomHistogramStore(std::mt19937_64& rng, uint32_t vertices, uint32_t bins, uint32_t buckets) {
  FeatureStore store = FeatureStore::Histograms(bins, buckets).value();
  std::uniform_int_distribution<int32_t> count(-3, 12);
  std::vector<int32_t> h(size_t{bins} * buckets);
  for (uint32_t v = 0; v < vertices; ++v) {
    for (int32_t& c : h) c = count(rng);
    EXPECT_TRUE(store.AddHistogram(h).ok());
  }
  return store;
}

}  // namespace nodefl::server::fedwalk::test
