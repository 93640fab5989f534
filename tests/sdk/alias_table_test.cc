// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/alias_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "heap_counter.h"
#include "nodefl/privacy/exponential_mechanism.h"
#include "stat_util.h"

namespace nodefl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A built table together with the storage it views.
struct Built {
  std::vector<double> prob;
  std::vector<uint32_t> alias;
  AliasTable table;
};
void BuildInto(Built& b, const std::vector<double>& lw) {
  b.prob.assign(lw.size(), -1.0);
  b.alias.assign(lw.size(), 0);
  ASSERT_TRUE(b.table.Build(lw, b.prob, b.alias).ok());
}

// The distribution a table represents, read straight from its storage in
// O(n): an independent check of both Probability() and the structure.
std::vector<double> FromStorage(const Built& b) {
  const size_t n = b.prob.size();
  std::vector<double> p(n, 0.0);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_GE(b.prob[k], 0.0);
    EXPECT_LE(b.prob[k], 1.0);
    EXPECT_LT(b.alias[k], n);
    p[k] += b.prob[k] / n;
    p[b.alias[k]] += (1.0 - b.prob[k]) / n;
  }
  return p;
}

// Log-weights drawn from the DRBG, with every seventh candidate excluded.
std::vector<double> RandomLogWeights(Drbg& rng, size_t n, double spread) {
  std::vector<double> lw(n);
  for (size_t i = 0; i < n; ++i) {
    lw[i] = (i % 7 == 3) ? -kInf : spread * (2.0 * rng.UniformDouble() - 1.0);
  }
  return lw;
}

// Numerical, not statistical. A column's threshold starts with a few ulps of
// normalisation error; then every pairing step that feeds it adds at most
// half an ulp of a value below q0 (the "- 1" is exact for values in [1, 2^53]).
// A column fed by all n steps from q0 <= n thus gathers at most ~n^2 ulps of
// 1/2, i.e. n * 2^-54 after the division by n. The floor 1e-12 covers the
// normalisation error and the O(n) sum in Probability() for small tables.
double ProbTolerance(size_t n) {
  return std::max(1e-12, static_cast<double>(n) * std::numeric_limits<double>::epsilon());
}

TEST(AliasTableTest, ProbabilityEqualsNormalisedWeight) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(1).ok());
  for (size_t n : {2u, 3u, 12u, 257u, 2000u}) {
    const std::vector<double> lw = RandomLogWeights(rng, n, 20.0);
    const std::vector<double> expected = testing::NormalizedLogWeights(lw);
    Built b;
    BuildInto(b, lw);
    ASSERT_EQ(b.table.size(), n);
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double p = b.table.Probability(i);
      EXPECT_NEAR(p, expected[i], ProbTolerance(n)) << "n=" << n << " i=" << i;
      if (lw[i] == -kInf) {
        EXPECT_EQ(p, 0.0);
      }
      total += p;
    }
    EXPECT_NEAR(total, 1.0, ProbTolerance(n));
    EXPECT_EQ(b.table.Probability(n), 0.0);
  }
}

TEST(AliasTableTest, LargeSkewedTableStaysExact) {
  // One dominant weight against many tiny ones drives the largest number of
  // pairing steps through a single column: the worst case for rounding.
  constexpr size_t kN = 50000;
  std::vector<double> lw(kN);
  for (size_t i = 0; i < kN; ++i) lw[i] = (i % 11 == 5) ? -kInf : -30.0 - (i % 97) * 0.1;
  lw[kN / 2] = 0.0;
  const std::vector<double> expected = testing::NormalizedLogWeights(lw);
  Built b;
  BuildInto(b, lw);
  const std::vector<double> got = FromStorage(b);
  double total = 0.0;
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(got[i], expected[i], ProbTolerance(kN)) << i;
    if (lw[i] == -kInf) {
      ASSERT_EQ(got[i], 0.0) << i;
    }
    total += got[i];
  }
  EXPECT_NEAR(total, 1.0, ProbTolerance(kN));
  EXPECT_NEAR(b.table.Probability(kN / 2), expected[kN / 2], ProbTolerance(kN));
}

TEST(AliasTableTest, UniformAndSingleCandidate) {
  Built uniform;
  BuildInto(uniform, std::vector<double>(5, -2.5));
  for (size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(uniform.table.Probability(i), 0.2);

  Built single;
  BuildInto(single, {-7.0});
  EXPECT_EQ(single.table.Probability(0), 1.0);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(2).ok());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(single.table.Sample(rng), 0u);

  Built one_left;  // every other candidate excluded
  BuildInto(one_left, {-kInf, 3.0, -kInf, -kInf});
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(one_left.table.Sample(rng), 1u);
  EXPECT_EQ(one_left.table.Probability(1), 1.0);
}

TEST(AliasTableTest, ExtremeLogWeightsGiveNoNaN) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(3).ok());
  const std::vector<std::vector<double>> cases = {
      {1e4, 0.0, -1e4, 1e4 - 2.0}, {-1e4, -1e4 - 1.0, -2e4, -kInf}, {1e4, -1e4}};
  for (const std::vector<double>& lw : cases) {
    Built b;
    BuildInto(b, lw);
    const std::vector<double> expected = testing::NormalizedLogWeights(lw);
    for (size_t i = 0; i < lw.size(); ++i) {
      const double p = b.table.Probability(i);
      EXPECT_FALSE(std::isnan(p));
      EXPECT_NEAR(p, expected[i], ProbTolerance(lw.size()));
    }
    for (int i = 0; i < 1000; ++i) {
      const size_t s = b.table.Sample(rng);
      ASSERT_LT(s, lw.size());
      EXPECT_GT(expected[s], 0.0);  // nothing 1e4 below the top is ever drawn
    }
  }
}

// Frequencies of Sample against the exact distribution. The weights keep
// every expected count above 5 at this N, so no cells need merging; the
// excluded candidate is checked separately (count must be exactly 0).
constexpr int kDraws = 200000;
const std::vector<double>& FrequencyLogWeights() {
  static const std::vector<double> lw = {0.0, -0.3, -kInf, -1.0, -1.7, 0.4,
                                         -2.5, -4.0, -0.9, -6.0};
  return lw;
}

double ChiSquareOverIncluded(const std::vector<double>& counts, const std::vector<double>& probs,
                             int* df) {
  std::vector<double> obs, exp;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0.0) continue;
    EXPECT_GE(probs[i] * kDraws, 5.0);
    obs.push_back(counts[i]);
    exp.push_back(probs[i] * kDraws);
  }
  *df = static_cast<int>(obs.size()) - 1;
  return testing::ChiSquareStatistic(obs, exp);
}

TEST(AliasTableTest, SampleFrequenciesMatch) {
  const std::vector<double>& lw = FrequencyLogWeights();
  Built b;
  BuildInto(b, lw);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(4).ok());
  std::vector<double> counts(lw.size(), 0.0);
  for (int i = 0; i < kDraws; ++i) counts[b.table.Sample(rng)] += 1;
  EXPECT_EQ(counts[2], 0.0);
  int df = 0;
  const double stat = ChiSquareOverIncluded(counts, testing::NormalizedLogWeights(lw), &df);
  EXPECT_LT(stat, testing::ChiSquareCritical(df));
}

TEST(AliasTableTest, ChiSquareRejectsBrokenAliasSamplers) {
  // Power: two plausible alias-method bugs, simulated on the real table's
  // storage, fail the same check at the same N.
  const std::vector<double>& lw = FrequencyLogWeights();
  const std::vector<double> probs = testing::NormalizedLogWeights(lw);
  Built b;
  BuildInto(b, lw);
  const size_t n = lw.size();
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(5).ok());
  std::vector<double> swapped(n, 0.0), column_only(n, 0.0);
  for (int i = 0; i < kDraws; ++i) {
    // Branches swapped: the alias is taken when u falls below the threshold.
    const size_t k = rng.UniformBelow(n);
    swapped[rng.UniformDouble() < b.prob[k] ? b.alias[k] : k] += 1;
    // Thresholds ignored: the column index returned as drawn.
    column_only[rng.UniformBelow(n)] += 1;
  }
  for (const std::vector<double>* counts : {&swapped, &column_only}) {
    int df = 0;
    const double stat = ChiSquareOverIncluded(*counts, probs, &df);
    EXPECT_GT(stat, testing::ChiSquareCritical(df));
  }
}

TEST(AliasTableTest, BadInputsAreRejectedAndLeaveTheTableEmpty) {
  std::vector<double> prob(4, 7.0);
  std::vector<uint32_t> alias(4, 9);
  AliasTable table;
  EXPECT_FALSE(table.built());
  const std::vector<double> good = {0.0, -1.0, -2.0, -3.0};
  ASSERT_TRUE(table.Build(good, prob, alias).ok());
  EXPECT_EQ(table.size(), 4u);

  const std::vector<std::vector<double>> bad = {
      {}, {0.0, std::nan("")}, {0.0, kInf}, {-kInf, -kInf}};
  for (const std::vector<double>& lw : bad) {
    std::vector<double> p(4, 7.0);
    std::vector<uint32_t> a(4, 9);
    EXPECT_EQ(table.Build(lw, p, a), Status::InvalidArgument());
    EXPECT_EQ(table.size(), 0u);
    EXPECT_EQ(p, std::vector<double>(4, 7.0));  // storage untouched
    EXPECT_EQ(a, std::vector<uint32_t>(4, 9));
  }
  // Storage shorter than n.
  EXPECT_EQ(table.Build(good, Span<double>(prob.data(), 3), alias), Status::InvalidArgument());
  EXPECT_EQ(table.Build(good, prob, Span<uint32_t>(alias.data(), 3)), Status::InvalidArgument());
  // Longer storage is fine: only the first n slots are used.
  std::vector<double> long_prob(10, 7.0);
  std::vector<uint32_t> long_alias(10, 9);
  ASSERT_TRUE(table.Build(good, long_prob, long_alias).ok());
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(long_prob[4], 7.0);
  // More candidates than 32-bit aliases can name; rejected before any read,
  // so the (unbacked) spans are never dereferenced.
  if (sizeof(size_t) > 4) {
    const size_t too_many = static_cast<size_t>(AliasTable::kMaxSize) + 1;
    const Span<const double> huge(good.data(), too_many);
    EXPECT_EQ(table.Build(huge, Span<double>(prob.data(), too_many),
                          Span<uint32_t>(alias.data(), too_many)),
              Status::InvalidArgument());
    EXPECT_FALSE(table.built());
  }
}

TEST(AliasTableTest, TrySampleRefusesUnbuiltTablesAndFailedDrbg) {
  AliasTable empty;
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(6).ok());
  EXPECT_EQ(empty.TrySample(rng).status(), Status::FailedPrecondition());

  Built b;
  BuildInto(b, {0.0, -1.0});
  const Result<size_t> ok = b.table.TrySample(rng);
  ASSERT_TRUE(ok.ok());
  EXPECT_LT(*ok, 2u);
  Drbg unseeded;
  EXPECT_EQ(b.table.TrySample(unseeded).status(), Status::FailedPrecondition());
}

TEST(AliasTableTest, RebuildReplacesTheDistribution) {
  Built b;
  BuildInto(b, {0.0, -kInf, -kInf});
  EXPECT_EQ(b.table.Probability(0), 1.0);
  const std::vector<double> lw = {-kInf, 0.0, std::log(3.0)};
  ASSERT_TRUE(b.table.Build(lw, b.prob, b.alias).ok());
  EXPECT_EQ(b.table.Probability(0), 0.0);
  EXPECT_NEAR(b.table.Probability(1), 0.25, ProbTolerance(lw.size()));
  EXPECT_NEAR(b.table.Probability(2), 0.75, ProbTolerance(lw.size()));
}

TEST(AliasTableTest, NothingAllocates) {
  const double lw[] = {0.0, -1.0, -kInf, 2.0, -0.5};
  double prob[5];
  uint32_t alias[5];
  AliasTable table;
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(7).ok());
  NODEFL_EXPECT_NO_HEAP(table.Build(lw, prob, alias).IgnoreError());
  NODEFL_EXPECT_NO_HEAP({
    for (int i = 0; i < 100; ++i) (void)table.Sample(rng);
  });
  NODEFL_EXPECT_NO_HEAP((void)table.TrySample(rng));
  NODEFL_EXPECT_NO_HEAP((void)table.Probability(3));
  NODEFL_EXPECT_NO_HEAP((void)table.size());
  NODEFL_EXPECT_NO_HEAP((void)table.built());
  NODEFL_EXPECT_NO_HEAP(table.Build(Span<const double>(), prob, alias).IgnoreError());
}

}  // namespace
}  // namespace nodefl
