// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DTW (seed Eq. 6-7): the naive reference against an enumeration of every
// warping path, the fast version against the reference, and the properties
// the HCT relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "nodefl/server/fedwalk/dissimilarity/dtw.h"
#include "nodefl/server/fedwalk/dissimilarity/features.h"
#include "dtw_reference.h"
#include "random_matrices.h"

namespace nodefl::server::fedwalk {
namespace {

using test::RandomMatrix;

double RowDistance(const std::vector<float>& a, size_t i, const std::vector<float>& b, size_t j, size_t k) {
  double d = 0;
  for (size_t c = 0; c < k; ++c) d += std::fabs(double{a[i * k + c]} - double{b[j * k + c]});
  return d;
}

// Minimum over every monotone warping path from (0,0) to (x-1,y-1) with
// steps (1,0), (0,1), (1,1) of the summed row distances: DTW by its
// definition, with no dynamic programme.
void EnumeratePaths(const std::vector<float>& a, size_t x, const std::vector<float>& b, size_t y, size_t k,
                    size_t i, size_t j, double sum, double& best) {
  sum += RowDistance(a, i, b, j, k);
  if (i == x - 1 && j == y - 1) {
    best = std::min(best, sum);
    return;
  }
  if (i + 1 < x) EnumeratePaths(a, x, b, y, k, i + 1, j, sum, best);
  if (j + 1 < y) EnumeratePaths(a, x, b, y, k, i, j + 1, sum, best);
  if (i + 1 < x && j + 1 < y) EnumeratePaths(a, x, b, y, k, i + 1, j + 1, sum, best);
}

double BruteForceDtw(const std::vector<float>& a, size_t x, const std::vector<float>& b, size_t y, size_t k) {
  double best = std::numeric_limits<double>::infinity();
  EnumeratePaths(a, x, b, y, k, 0, 0, 0.0, best);
  return best;
}

double FastDtw(const std::vector<float>& a, size_t x, const std::vector<float>& b, size_t y, size_t k) {
  DtwWorkspace workspace;
  return DtwL1(a.data(), x, b.data(), y, k, workspace);
}

TEST(DtwTest, HandCheckedExample) {
  // k = 1, a = (0, 1, 2), b = (0, 2). Row distances |a_i - b_j|:
  //   a=0: 0 2 / a=1: 1 1 / a=2: 2 0.
  // Best path (0,0) (1,0) (2,1) [or via (1,1)]: 0 + 1 + 0 = 1.
  const std::vector<float> a = {0, 1, 2};
  const std::vector<float> b = {0, 2};
  EXPECT_EQ(DtwL1Reference(a.data(), 3, b.data(), 2, 1), 1.0);
  EXPECT_EQ(FastDtw(a, 3, b, 2, 1), 1.0);
  // One row each: cost(1,1) = |(3,-1) - (1,2)|_1 = 2 + 3 = 5.
  const std::vector<float> p = {3, -1};
  const std::vector<float> q = {1, 2};
  EXPECT_EQ(DtwL1Reference(p.data(), 1, q.data(), 1, 2), 5.0);
  EXPECT_EQ(FastDtw(p, 1, q, 1, 2), 5.0);
}

TEST(DtwTest, ReferenceMatchesEveryPathEnumeration) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<size_t> rows(1, 5);
  std::uniform_int_distribution<size_t> bins(1, 6);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t k = bins(rng);
    const size_t x = rows(rng);
    const size_t y = rows(rng);
    const std::vector<float> a = RandomMatrix(rng, x, k);
    const std::vector<float> b = RandomMatrix(rng, y, k);
    const double brute = BruteForceDtw(a, x, b, y, k);
    EXPECT_NEAR(DtwL1Reference(a.data(), x, b.data(), y, k), brute, 1e-9 * brute) << "trial " << trial;
    EXPECT_NEAR(FastDtw(a, x, b, y, k), brute, DtwRelativeTolerance(k) * brute) << "trial " << trial;
  }
}

TEST(DtwTest, FastMatchesReferenceOnRandomMatrices) {
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<size_t> rows(0, 30);
  std::uniform_int_distribution<size_t> bins(1, 16);
  DtwWorkspace workspace;  // reused: stale contents must not leak into results
  int empties = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t k = bins(rng);
    const size_t x = rows(rng);
    const size_t y = rows(rng);
    empties += (x == 0 || y == 0);
    const std::vector<float> a = RandomMatrix(rng, x, k);
    const std::vector<float> b = RandomMatrix(rng, y, k);
    const double reference = DtwL1Reference(a.data(), x, b.data(), y, k);
    const double fast = DtwL1(a.data(), x, b.data(), y, k, workspace);
    EXPECT_NEAR(fast, reference, DtwRelativeTolerance(k) * reference)
        << "trial " << trial << " k " << k << " rows " << x << " x " << y;
  }
  EXPECT_GT(empties, 20);  // the empty cases were exercised
}

TEST(DtwTest, FastMatchesReferenceOnLongSkewedSequences) {
  // Many row blocks, remainders of every size and a long inner sequence.
  std::mt19937_64 rng(13);
  const size_t shapes[][2] = {{257, 3}, {3, 257}, {200, 199}, {64, 1}, {1, 64}, {131, 77}};
  for (const auto& shape : shapes) {
    for (size_t k : {1u, 9u, 16u}) {
      const std::vector<float> a = RandomMatrix(rng, shape[0], k);
      const std::vector<float> b = RandomMatrix(rng, shape[1], k);
      const double reference = DtwL1Reference(a.data(), shape[0], b.data(), shape[1], k);
      EXPECT_NEAR(FastDtw(a, shape[0], b, shape[1], k), reference, DtwRelativeTolerance(k) * reference)
          << shape[0] << " x " << shape[1] << " k " << k;
    }
  }
}

TEST(DtwTest, EmptyMatrices) {
  const std::vector<float> none;
  const std::vector<float> m = {1.5f, -2.0f, 0.25f, 3.0f};  // 2 rows, k = 2: norms 3.5 and 3.25
  EXPECT_EQ(DtwL1Reference(none.data(), 0, none.data(), 0, 2), 0.0);
  EXPECT_EQ(FastDtw(none, 0, none, 0, 2), 0.0);
  EXPECT_EQ(DtwL1Reference(none.data(), 0, m.data(), 2, 2), 6.75);
  EXPECT_EQ(DtwL1Reference(m.data(), 2, none.data(), 0, 2), 6.75);
  EXPECT_EQ(FastDtw(none, 0, m, 2, 2), 6.75);
  EXPECT_EQ(FastDtw(m, 2, none, 0, 2), 6.75);
}

TEST(DtwTest, SymmetricBitForBit) {
  std::mt19937_64 rng(14);
  std::uniform_int_distribution<size_t> rows(0, 40);
  DtwWorkspace workspace;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t k = 1 + trial % 16;
    const size_t x = rows(rng);
    const size_t y = trial % 5 == 0 ? x : rows(rng);  // equal lengths too
    const std::vector<float> a = RandomMatrix(rng, x, k);
    const std::vector<float> b = RandomMatrix(rng, y, k);
    EXPECT_EQ(DtwL1Reference(a.data(), x, b.data(), y, k), DtwL1Reference(b.data(), y, a.data(), x, k));
    EXPECT_EQ(DtwL1(a.data(), x, b.data(), y, k, workspace), DtwL1(b.data(), y, a.data(), x, k, workspace));
  }
}

TEST(DtwTest, ZeroForIdenticalMatricesOnly) {
  std::mt19937_64 rng(15);
  DtwWorkspace workspace;
  for (size_t rows : {1u, 7u, 8u, 9u, 33u}) {
    const std::vector<float> a = RandomMatrix(rng, rows, 9);
    EXPECT_EQ(DtwL1Reference(a.data(), rows, a.data(), rows, 9), 0.0);
    EXPECT_EQ(DtwL1(a.data(), rows, a.data(), rows, 9, workspace), 0.0);
    std::vector<float> changed = a;
    changed[changed.size() / 2] += 0.5f;
    EXPECT_GT(DtwL1(a.data(), rows, changed.data(), rows, 9, workspace), 0.0);
  }
}

TEST(DtwTest, OneRowEachIsThePlainL1Distance) {
  std::mt19937_64 rng(16);
  DtwWorkspace workspace;
  for (size_t k = 1; k <= 16; ++k) {
    const std::vector<float> a = RandomMatrix(rng, 1, k);
    const std::vector<float> b = RandomMatrix(rng, 1, k);
    double l1 = 0;
    for (size_t c = 0; c < k; ++c) l1 += std::fabs(double{a[c]} - double{b[c]});
    EXPECT_DOUBLE_EQ(DtwL1Reference(a.data(), 1, b.data(), 1, k), l1);
    EXPECT_NEAR(DtwL1(a.data(), 1, b.data(), 1, k, workspace), l1, DtwRelativeTolerance(k) * l1);
  }
}

TEST(DtwTest, RepeatingARowCostsNothingExtra) {
  // DTW may match one row of b to several equal rows of a for free: a
  // sequence with a duplicated row is at distance 0 from the original.
  const std::vector<float> a = {1, 2, 3, 3, 4, 5};  // rows (1,2) (3,3) (4,5)
  const std::vector<float> doubled = {1, 2, 3, 3, 3, 3, 4, 5};
  EXPECT_EQ(DtwL1Reference(a.data(), 3, doubled.data(), 4, 2), 0.0);
  EXPECT_EQ(FastDtw(a, 3, doubled, 4, 2), 0.0);
}

TEST(DtwTest, StoreViewsGiveTheSameValuesAsRowMajorInput) {
  std::mt19937_64 rng(17);
  std::vector<std::vector<float>> matrices;
  const FeatureStore store = test::RandomOrderedStore(rng, 12, 20, 5, matrices);
  DtwWorkspace workspace;
  for (uint32_t u = 0; u < store.size(); ++u) {
    for (uint32_t v = 0; v < store.size(); ++v) {
      EXPECT_EQ(DtwL1(store.matrix(u), store.matrix(v), workspace),
                DtwL1(matrices[u].data(), store.rows(u), matrices[v].data(), store.rows(v), 5, workspace));
    }
  }
}

TEST(DtwTest, WarmWorkspaceDoesNotGrow) {
  std::mt19937_64 rng(18);
  std::vector<std::vector<float>> matrices;
  const FeatureStore store = test::RandomOrderedStore(rng, 10, 50, 8, matrices);
  DtwWorkspace workspace;
  for (uint32_t u = 0; u < store.size(); ++u) {
    for (uint32_t v = 0; v < store.size(); ++v) (void)DtwL1(store.matrix(u), store.matrix(v), workspace);
  }
  const size_t warmed = workspace.bytes();
  EXPECT_GT(warmed, 0u);
  for (uint32_t u = 0; u < store.size(); ++u) {
    for (uint32_t v = 0; v < store.size(); ++v) (void)DtwL1(store.matrix(u), store.matrix(v), workspace);
  }
  EXPECT_EQ(workspace.bytes(), warmed);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
