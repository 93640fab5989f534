// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ClusterNnChain against hand-computed trees and against the naive greedy
// algorithm; both against the scipy linkage rules and the greedy property.
#include "nodefl/server/fedwalk/hct/linkage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hct_test_support.h"
#include "naive_linkage.h"

namespace nodefl::server::fedwalk {
namespace {

using test::CheckGreedyReplay;
using test::CheckScipyLinkage;
using test::PartitionAfter;

constexpr Linkage kAllLinkages[] = {Linkage::kAverage, Linkage::kComplete, Linkage::kSingle};
// Float storage of Lance-Williams updates against double arithmetic.
constexpr double kRelTolerance = 1e-5;

// Distances between points on a line.
CondensedMatrix LineDistances(const std::vector<double>& x) {
  CondensedMatrix d(static_cast<uint32_t>(x.size()));
  for (uint32_t i = 0; i < x.size(); ++i) {
    for (uint32_t j = i + 1; j < x.size(); ++j) d.set(i, j, static_cast<float>(std::fabs(x[i] - x[j])));
  }
  return d;
}

std::vector<Merge> NnChain(CondensedMatrix d, Linkage linkage) {
  auto merges = ClusterNnChain(std::move(d), linkage);
  EXPECT_TRUE(merges.has_value());
  return merges.value_or(std::vector<Merge>{});
}

void ExpectMerges(const std::vector<Merge>& got, const std::vector<Merge>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].a, want[i].a) << "merge " << i;
    EXPECT_EQ(got[i].b, want[i].b) << "merge " << i;
    EXPECT_NEAR(got[i].height, want[i].height, 1e-6) << "merge " << i;
    EXPECT_EQ(got[i].size, want[i].size) << "merge " << i;
  }
}

// Points 0, 1, 4, 10: the chain merges in height order.
TEST(LinkageTest, HandComputedLine) {
  const CondensedMatrix d = LineDistances({0, 1, 4, 10});
  // d(01,2) = 3.5, d(01,3) = 9.5, d(2,3) = 6; then d(012,3) = 25/3.
  const std::vector<Merge> average = {{0, 1, 1, 2}, {2, 4, 3.5, 3}, {3, 5, 25.0 / 3.0, 4}};
  const std::vector<Merge> complete = {{0, 1, 1, 2}, {2, 4, 4, 3}, {3, 5, 10, 4}};
  const std::vector<Merge> single = {{0, 1, 1, 2}, {2, 4, 3, 3}, {3, 5, 6, 4}};
  ExpectMerges(NnChain(d, Linkage::kAverage), average);
  ExpectMerges(NnChain(d, Linkage::kComplete), complete);
  ExpectMerges(NnChain(d, Linkage::kSingle), single);
  ExpectMerges(ClusterNaive(d, Linkage::kAverage).value(), average);
  ExpectMerges(ClusterNaive(d, Linkage::kComplete).value(), complete);
  ExpectMerges(ClusterNaive(d, Linkage::kSingle).value(), single);
}

// Points 0, 10, 11, 30: a chain started at 0 walks to 10 and merges (10, 11)
// first while 0 is still on the chain, so the relabelling must hand the
// merged cluster the id 4 and the next merge must refer to it.
TEST(LinkageTest, HandComputedChainMergesAwayFromItsStart) {
  const CondensedMatrix d = LineDistances({0, 10, 11, 30});
  // Average: d(0, {1,2}) = 10.5, d({1,2}, 3) = 19.5, d(0, 3) = 30, then
  // d({0,1,2}, 3) = (30 + 20 + 19) / 3 = 23.
  ExpectMerges(NnChain(d, Linkage::kAverage), {{1, 2, 1, 2}, {0, 4, 10.5, 3}, {3, 5, 23, 4}});
  ExpectMerges(NnChain(d, Linkage::kSingle), {{1, 2, 1, 2}, {0, 4, 10, 3}, {3, 5, 19, 4}});
  ExpectMerges(NnChain(d, Linkage::kComplete), {{1, 2, 1, 2}, {0, 4, 11, 3}, {3, 5, 30, 4}});
}

TEST(LinkageTest, TinyInputs) {
  for (Linkage linkage : kAllLinkages) {
    EXPECT_TRUE(NnChain(CondensedMatrix(0), linkage).empty());
    EXPECT_TRUE(NnChain(CondensedMatrix(1), linkage).empty());
    EXPECT_TRUE(ClusterNaive(CondensedMatrix(1), linkage).value().empty());
    CondensedMatrix two(2);
    two.set(0, 1, 2.5f);
    ExpectMerges(NnChain(two, linkage), {{0, 1, 2.5, 2}});
  }
}

TEST(LinkageTest, RefusesNonFiniteDistances) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    CondensedMatrix d = LineDistances({0, 1, 2, 3, 4});
    d.set(2, 4, bad);
    EXPECT_FALSE(ClusterNaive(d, Linkage::kAverage).has_value());
    EXPECT_FALSE(ClusterNnChain(std::move(d), Linkage::kAverage).has_value());
  }
}

// Indices i after which both merge lists' next heights are clearly
// separated, so the partition after i + 1 merges is unambiguous.
std::vector<size_t> SeparatedPrefixes(const std::vector<Merge>& x, const std::vector<Merge>& y) {
  std::vector<size_t> out;
  for (size_t i = 0; i < x.size(); ++i) {
    const auto separated = [&](const std::vector<Merge>& m) {
      return i + 1 == m.size() ||
             m[i + 1].height - m[i].height > 2 * kRelTolerance * std::max(1.0, std::fabs(m[i + 1].height));
    };
    if (separated(x) && separated(y)) out.push_back(i + 1);
  }
  return out;
}

// Heights equal within tolerance and partitions equal wherever heights
// separate; returns the number of partitions compared.
size_t ExpectSameHierarchy(const std::vector<Merge>& got, const std::vector<Merge>& want, uint32_t n) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].height, want[i].height, kRelTolerance * std::max(1e-3, std::fabs(want[i].height)))
        << "merge " << i;
  }
  const std::vector<size_t> prefixes = SeparatedPrefixes(got, want);
  for (size_t count : prefixes) {
    EXPECT_EQ(PartitionAfter(got, n, count), PartitionAfter(want, n, count)) << "after " << count << " merges";
  }
  return prefixes.size();
}

TEST(LinkageTest, NnChainMatchesNaiveOnRandomMatrices) {
  for (Linkage linkage : kAllLinkages) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      for (uint32_t n : {2u, 3u, 4u, 7u, 16u, 33u, 60u}) {
        SCOPED_TRACE(::testing::Message() << "linkage " << static_cast<int>(linkage) << " seed " << seed << " n " << n);
        Drbg rng;
        test::Seed(rng, seed, n);
        const CondensedMatrix d = test::RandomMatrix(rng, n);
        const std::vector<Merge> naive = ClusterNaive(d, linkage).value();
        const std::vector<Merge> nn = NnChain(d, linkage);
        EXPECT_EQ(CheckScipyLinkage(nn, n), "");
        EXPECT_EQ(CheckScipyLinkage(naive, n), "");
        const size_t compared = ExpectSameHierarchy(nn, naive, n);
        // Continuous random distances almost never tie: nearly every
        // prefix must have been compared, or the test checks nothing.
        EXPECT_GE(compared + 2, nn.size());
      }
    }
  }
}

TEST(LinkageTest, NnChainMatchesNaiveOnALargerMatrix) {
  Drbg rng;
  test::Seed(rng, 77);
  const uint32_t n = 300;
  const CondensedMatrix d = test::RandomMatrix(rng, n, 0, 50.0);
  for (Linkage linkage : kAllLinkages) {
    const std::vector<Merge> nn = NnChain(d, linkage);
    EXPECT_EQ(CheckScipyLinkage(nn, n), "");
    EXPECT_GE(ExpectSameHierarchy(nn, ClusterNaive(d, linkage).value(), n) + 5, nn.size());
  }
}

// The comparison above can fail: a different linkage gives a different
// hierarchy on the same matrix.
TEST(LinkageTest, ComparisonDetectsAWrongLinkage) {
  Drbg rng;
  test::Seed(rng, 5);
  const CondensedMatrix d = test::RandomMatrix(rng, 40);
  const std::vector<Merge> average = NnChain(d, Linkage::kAverage);
  const std::vector<Merge> single = ClusterNaive(d, Linkage::kSingle).value();
  bool differs = false;
  for (size_t i = 0; i < average.size(); ++i) {
    differs |= std::fabs(average[i].height - single[i].height) > kRelTolerance;
    differs |= PartitionAfter(average, 40, i + 1) != PartitionAfter(single, 40, i + 1);
  }
  EXPECT_TRUE(differs);
  EXPECT_NE(CheckGreedyReplay(d, average, Linkage::kSingle, kRelTolerance), "");
  EXPECT_NE(CheckGreedyReplay(d, single, Linkage::kAverage, kRelTolerance), "");
}

// Integer distances tie constantly. Single linkage still has one hierarchy
// (its partition at height h is the components of the graph of pairs <= h),
// so it must match the naive one exactly. Average and complete linkage have
// several equally valid trees under ties (points a, b, c with d(a,b) =
// d(b,c) = 1 < d(a,c): {a,b} or {b,c} first), and the chain need not pick
// the naive one; what must hold is that each of its merges joins a closest
// pair at the moment it is made, i.e. it is a run of the greedy algorithm.
TEST(LinkageTest, TiedDistances) {
  for (Linkage linkage : kAllLinkages) {
    for (uint32_t levels : {2u, 3u, 5u}) {
      for (uint32_t n : {5u, 20u, 60u}) {
        SCOPED_TRACE(::testing::Message() << "linkage " << static_cast<int>(linkage) << " levels " << levels << " n "
                                        << n);
        Drbg rng;
        test::Seed(rng, 100 + levels, n);
        const CondensedMatrix d = test::RandomMatrix(rng, n, levels);
        const std::vector<Merge> naive = ClusterNaive(d, linkage).value();
        const std::vector<Merge> nn = NnChain(d, linkage);
        EXPECT_EQ(CheckScipyLinkage(nn, n), "");
        EXPECT_EQ(CheckGreedyReplay(d, nn, linkage, kRelTolerance), "");
        EXPECT_EQ(CheckGreedyReplay(d, naive, linkage, kRelTolerance), "");
        if (linkage == Linkage::kSingle) {
          for (size_t i = 0; i < nn.size(); ++i) EXPECT_EQ(nn[i].height, naive[i].height) << "merge " << i;
          EXPECT_GE(ExpectSameHierarchy(nn, naive, n), 1u);
        }
      }
    }
  }
}

TEST(LinkageTest, Deterministic) {
  Drbg rng;
  test::Seed(rng, 9);
  const CondensedMatrix d = test::RandomMatrix(rng, 50, 3);
  for (Linkage linkage : kAllLinkages) EXPECT_EQ(NnChain(d, linkage), NnChain(d, linkage));
}

}  // namespace
}  // namespace nodefl::server::fedwalk
