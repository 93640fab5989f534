// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/degree_features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fedwalk_test_artefacts.h"
#include "heap_counter.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/privacy/discrete_laplace.h"
#include "stat_util.h"

namespace nodefl::fedwalk {
namespace {

using fedwalk::testing::EncodeDictionary;
using fedwalk::testing::NanRow;

// ---- Bin counts ---------------------------------------------------------------------

TEST(DegreeFeaturesTest, CountsNeighboursPerBinIgnoringAbsent) {
  const std::vector<uint8_t> bins = {0, 2, 2, kAbsentBin, 1, 2, kAbsentBin, 0};
  std::vector<uint32_t> counts(3, 99);
  ASSERT_TRUE(CountNeighboursPerBin(bins, 3, counts).ok());
  EXPECT_EQ(counts, (std::vector<uint32_t>{2, 1, 3}));

  ASSERT_TRUE(CountNeighboursPerBin({}, 3, counts).ok());
  EXPECT_EQ(counts, (std::vector<uint32_t>{0, 0, 0}));
}

TEST(DegreeFeaturesTest, RejectsBinsOutOfRange) {
  std::vector<uint32_t> counts(3);
  const std::vector<uint8_t> bad = {0, 3};
  EXPECT_EQ(CountNeighboursPerBin(bad, 3, counts), Status::InvalidArgument());
  EXPECT_EQ(CountNeighboursPerBin({}, 4, counts), Status::InvalidArgument());  // size mismatch
  std::vector<uint32_t> one(1, 0);
  EXPECT_EQ(AddNeighbourToBinCounts(1, one), Status::InvalidArgument());
  EXPECT_EQ(one[0], 0u);
  EXPECT_TRUE(AddNeighbourToBinCounts(kAbsentBin, one).ok());
  EXPECT_EQ(one[0], 0u);
}

// ---- Rows ------------------------------------------------------------------------------

TEST(DegreeFeaturesTest, RowSumIsTheEstimatedDegreeAndNanRowsAreAbsent) {
  const auto row = EncodeDictionary({{1.5f, -0.25f, 3.0f}});
  EXPECT_DOUBLE_EQ(EstimatedDegree(row), 4.25);
  EXPECT_TRUE(IsFiniteRow(row));
  const auto nan_row = EncodeDictionary({NanRow(3)});
  const auto one_nan = EncodeDictionary({{1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f}});
  const auto one_inf = EncodeDictionary({{1.0f, std::numeric_limits<float>::infinity(), 2.0f}});
  EXPECT_FALSE(IsFiniteRow(nan_row));
  EXPECT_FALSE(IsFiniteRow(one_nan));
  EXPECT_FALSE(IsFiniteRow(one_inf));
}

// ---- Eq. 5 order -----------------------------------------------------------------------

TEST(DegreeFeaturesTest, SortsByDegreeThenId) {
  std::vector<DegreeKey> keys = {{3.5, 10}, {-1.0, 4}, {3.5, 2}, {0.0, 9}, {3.5, 7}, {-1.0, 1}};
  SortByEstimatedDegree(keys);
  const std::vector<uint32_t> ids_expected = {1, 4, 9, 2, 7, 10};
  std::vector<uint32_t> ids;
  for (const DegreeKey& k : keys) ids.push_back(k.id);
  EXPECT_EQ(ids, ids_expected);
}

TEST(DegreeFeaturesTest, HeapSortHandlesTrivialSizes) {
  std::vector<DegreeKey> none;
  SortByEstimatedDegree(none);
  std::vector<DegreeKey> one = {{2.0, 5}};
  SortByEstimatedDegree(one);
  EXPECT_EQ(one[0].id, 5u);
  std::vector<DegreeKey> two = {{2.0, 5}, {1.0, 6}};
  SortByEstimatedDegree(two);
  EXPECT_EQ(two[0].id, 6u);
}

TEST(DegreeFeaturesTest, SortsThousandsOfNeighboursLikeAReferenceSort) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(41).ok());
  for (const uint64_t distinct : {uint64_t{3}, uint64_t{1} << 30}) {
    // 3 distinct degrees: almost every comparison is a tie broken by id.
    std::vector<DegreeKey> keys(4000);
    for (size_t i = 0; i < keys.size(); ++i) {
      keys[i].id = static_cast<uint32_t>(i * 2654435761u % 100000);  // distinct, scrambled
      keys[i].degree = static_cast<double>(rng.UniformBelow(distinct)) - 1.5;
    }
    std::vector<DegreeKey> reference = keys;
    std::sort(reference.begin(), reference.end(), [](const DegreeKey& a, const DegreeKey& b) {
      return a.degree != b.degree ? a.degree < b.degree : a.id < b.id;
    });
    SortByEstimatedDegree(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(keys[i].id, reference[i].id) << "position " << i;
      ASSERT_EQ(keys[i].degree, reference[i].degree);
    }
  }
}

// ---- Histogram -------------------------------------------------------------------------

TEST(DegreeFeaturesTest, HistogramCountsEachRowOncePerBin) {
  // bins = 2, buckets = 4: bucket 0 < 1 (and NaN), 1 = [1, 2), 2 = [2, 4),
  // 3 = [4, inf).
  const auto rows = EncodeDictionary({
      {0.5f, 3.0f},    // bin 0 -> 0, bin 1 -> 2
      {1.0f, 100.0f},  // 1, 3
      {-2.0f, 1.999f}, // 0, 1
      {2.0f, 4.0f},    // 2, 3
  });
  std::vector<int32_t> h(8, -7);
  ASSERT_TRUE(BuildDegreeHistogram(rows, 2, 4, h).ok());
  EXPECT_EQ(h, (std::vector<int32_t>{2, 1, 1, 0, /* bin 1 */ 0, 1, 1, 2}));
  // Every row lands once in each bin.
  for (uint32_t bin = 0; bin < 2; ++bin) {
    int32_t total = 0;
    for (uint32_t b = 0; b < 4; ++b) total += h[bin * 4 + b];
    EXPECT_EQ(total, 4);
  }
  // Incremental adding gives the same.
  std::vector<int32_t> inc(8, 0);
  for (size_t at = 0; at < rows.size(); at += 8) {
    ASSERT_TRUE(AddRowToDegreeHistogram(ConstByteSpan(rows).subspan(at, 8), 2, 4, inc).ok());
  }
  EXPECT_EQ(inc, h);
}

TEST(DegreeFeaturesTest, HistogramRejectsBadShapes) {
  const auto rows = EncodeDictionary({{1.0f, 2.0f}});
  std::vector<int32_t> h(8);
  EXPECT_EQ(BuildDegreeHistogram(rows, 2, 3, h), Status::InvalidArgument());  // size
  EXPECT_EQ(BuildDegreeHistogram(ConstByteSpan(rows).first(7), 2, 4, h), Status::InvalidArgument());
  std::vector<int32_t> one_bucket(2);
  EXPECT_EQ(BuildDegreeHistogram(rows, 2, 1, one_bucket), Status::InvalidArgument());  // < kMinBuckets
  std::vector<int32_t> big((kMaxBins + 1) * 4);
  EXPECT_EQ(AddRowToDegreeHistogram(rows, kMaxBins + 1, 4, big), Status::InvalidArgument());
}

// ---- Histogram noise -------------------------------------------------------------------

double Variance(double q) { return 2.0 * q / ((1.0 - q) * (1.0 - q)); }

// E X^4 of the discrete Laplace with parameter q, summed from the pmf.
double FourthMoment(double q) {
  double sum = 0.0;
  for (int k = 1; k < 100000; ++k) {
    const double kd = k;
    const double term = 2.0 * kd * kd * kd * kd * (1.0 - q) / (1.0 + q) * std::pow(q, kd);
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

TEST(DegreeFeaturesTest, NoiseHistogramHasTheDiscreteLaplaceMomentsForSensitivityBins) {
  // With bins = 4 and epsilon = 1 the scale must be t = bins/epsilon = 4,
  // Var = 2 e^{-1/t} / (1 - e^{-1/t})^2 ~ 31.8. A mechanism that forgot the
  // sensitivity (t = 1/epsilon, Var ~ 1.84) is rejected below.
  const uint32_t bins = 4;
  const uint32_t buckets = 16;
  const double epsilon = 1.0;
  Result<DiscreteLaplaceScale> scale = DiscreteLaplaceScaleFor(epsilon, bins);
  ASSERT_TRUE(scale.ok());
  const double t = static_cast<double>(scale->numerator) / static_cast<double>(scale->denominator);
  const double q = std::exp(-1.0 / t);
  const double sigma2 = Variance(q);

  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(2024).ok());
  const int32_t base = 5;
  std::vector<int32_t> cells(bins * buckets);
  double sum = 0.0, squares = 0.0;
  size_t n = 0;
  double spent = -1.0;
  for (int rep = 0; rep < 2000; ++rep) {
    std::fill(cells.begin(), cells.end(), base);
    ASSERT_TRUE(NoiseHistogram(rng, epsilon, bins, cells, &spent).ok());
    for (int32_t c : cells) {
      const double x = c - base;  // the noise itself, mean 0 known
      sum += x;
      squares += x * x;
      ++n;
    }
  }
  const double nd = static_cast<double>(n);
  const double mean = sum / nd;
  const double var = squares / nd;  // unbiased for a known mean of 0
  const double z = ::nodefl::testing::ZBound();
  const double mean_bound = z * std::sqrt(sigma2 / nd);
  const double var_bound = z * std::sqrt((FourthMoment(q) - sigma2 * sigma2) / nd);
  EXPECT_LT(std::fabs(mean), mean_bound);
  EXPECT_LT(std::fabs(var - sigma2), var_bound) << "variance " << var << " expected " << sigma2;
  // Power: the bound is tight enough to reject sensitivity 1.
  EXPECT_GT(std::fabs(Variance(std::exp(-epsilon)) - sigma2), 10 * var_bound);

  // The reported epsilon is the delivered one for sensitivity `bins`.
  Result<double> delivered = DiscreteLaplaceEpsilon(*scale, bins);
  ASSERT_TRUE(delivered.ok());
  EXPECT_EQ(spent, *delivered);
  EXPECT_LE(spent, epsilon);
  EXPECT_GE(spent, epsilon * (1 - 1e-6));
}

TEST(DegreeFeaturesTest, NoiseHistogramIsReproducibleFromTheSeed) {
  std::vector<int32_t> a(3 * 4, 2), b(3 * 4, 2);
  Drbg r1, r2;
  ASSERT_TRUE(r1.SeedDeterministic(9, 1).ok());
  ASSERT_TRUE(r2.SeedDeterministic(9, 1).ok());
  double e1 = 0, e2 = 0;
  ASSERT_TRUE(NoiseHistogram(r1, 0.5, 3, a, &e1).ok());
  ASSERT_TRUE(NoiseHistogram(r2, 0.5, 3, b, &e2).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(e1, e2);
  EXPECT_NE(a, std::vector<int32_t>(12, 2));  // noise was added
}

TEST(DegreeFeaturesTest, NoiseHistogramRefusalsReleaseNothing) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(3).ok());
  std::vector<int32_t> cells(8, 4);
  double spent = 7.0;
  EXPECT_EQ(NoiseHistogram(rng, 1.0, 3, cells, &spent), Status::InvalidArgument());  // 8 % 3 != 0
  EXPECT_EQ(spent, 0.0);
  EXPECT_EQ(cells, std::vector<int32_t>(8, 0));
  cells.assign(8, 4);
  EXPECT_EQ(NoiseHistogram(rng, 0.0, 2, cells, &spent), Status::InvalidArgument());
  EXPECT_EQ(cells, std::vector<int32_t>(8, 0));
  EXPECT_EQ(NoiseHistogram(rng, 1.0, 0, cells, &spent), Status::InvalidArgument());
  EXPECT_EQ(NoiseHistogram(rng, 1.0, 2, cells, nullptr), Status::InvalidArgument());
  Drbg unseeded;  // failed DRBG: nothing is released
  cells.assign(8, 4);
  EXPECT_FALSE(NoiseHistogram(unseeded, 1.0, 2, cells, &spent).ok());
  EXPECT_EQ(spent, 0.0);
  EXPECT_EQ(cells, std::vector<int32_t>(8, 0));
}

TEST(DegreeFeaturesTest, NeverAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(5).ok());
  std::vector<int32_t> cells(kMaxBins * kMaxBuckets, 1);
  std::vector<DegreeKey> keys(500);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = {static_cast<double>(i % 7), static_cast<uint32_t>(i)};
  const auto rows = EncodeDictionary({{1.0f, 2.0f, 3.0f}, {0.5f, 9.0f, 17.0f}});
  std::vector<int32_t> h(3 * 8);
  double spent = 0;
  NODEFL_EXPECT_NO_HEAP({
    NoiseHistogram(rng, 1.0, kMaxBins, cells, &spent).IgnoreError();
    SortByEstimatedDegree(keys);
    BuildDegreeHistogram(rows, 3, 8, h).IgnoreError();
  });
  EXPECT_GT(spent, 0.0);
}

}  // namespace
}  // namespace nodefl::fedwalk
