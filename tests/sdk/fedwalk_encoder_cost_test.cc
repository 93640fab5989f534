// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// MeasureEncoderRows: the walk encoder's (epsilon, delta) over the rows a
// device holds, computed exactly from the Q31 alias tables.
#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/fedwalk/encoder_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "nodefl/random/drbg.h"

namespace nodefl::fedwalk {
namespace {

constexpr uint32_t kOne = kQ31One;
constexpr uint32_t kHalf = kQ31One / 2;

// Rows kept the way the HCT role keeps them: one pool, a record per
// neighbour pointing into it.
struct Held {
  std::vector<CodebookEntry> pool;
  std::vector<HctNeighbour> neighbours;
  void Add(uint32_t id, std::vector<CodebookEntry> row, float truncated = 0.0f) {
    HctNeighbour n;
    n.id = id;
    n.has_codebook_row = true;
    n.codebook_offset = static_cast<uint32_t>(pool.size());
    n.codebook_count = static_cast<uint16_t>(row.size());
    n.truncated_mass = truncated;
    pool.insert(pool.end(), row.begin(), row.end());
    neighbours.push_back(n);
  }
  Result<EncoderCost> Measure(std::vector<CodebookEntry> own = {}, float own_truncated = 0.0f) const {
    return MeasureEncoderRows(Span<const CodebookEntry>(own), own_truncated, neighbours, pool);
  }
};

// {a: 1/2, b: 1/2}
std::vector<CodebookEntry> Uniform(uint32_t a, uint32_t b) { return {{a, kOne, 0}, {b, kOne, 1}}; }
// {a: 1/4, b: 3/4}: a accepts half the time, else goes to b.
std::vector<CodebookEntry> Skewed(uint32_t a, uint32_t b) { return {{a, kHalf, 1}, {b, kOne, 1}}; }

TEST(EncoderCostTest, IdenticalRowsCostNothing) {
  Held h;
  h.Add(1, Uniform(7, 8));
  h.Add(2, Uniform(8, 7));  // the same distribution, entries in another order
  const Result<EncoderCost> c = h.Measure(Uniform(7, 8));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rows, 3u);
  EXPECT_EQ(c->epsilon, 0.0);
  EXPECT_EQ(c->delta, 0.0);
  EXPECT_FALSE(c->unbounded);
}

TEST(EncoderCostTest, TheLargestLogRatioOverCommonOutputs) {
  Held h;
  h.Add(1, Skewed(7, 8));   // 1/4, 3/4
  h.Add(2, Uniform(7, 8));  // 1/2, 1/2
  const Result<EncoderCost> c = h.Measure();
  ASSERT_TRUE(c.ok());
  // log((1/2)/(1/4)) = log 2 beats log((3/4)/(1/2)).
  EXPECT_NEAR(c->epsilon, std::log(2.0), 1e-12);
  EXPECT_EQ(c->delta, 0.0);
}

TEST(EncoderCostTest, OutputsMissingFromSomeRowAreDelta) {
  Held h;
  h.Add(1, Uniform(7, 8));  // 7: 1/2, 8: 1/2
  h.Add(2, Skewed(7, 9));   // 7: 1/4, 9: 3/4
  const Result<EncoderCost> c = h.Measure();
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->epsilon, std::log(2.0), 1e-12);  // over the common output 7
  EXPECT_NEAR(c->delta, 0.75, 1e-12);             // row 2 puts 3/4 on 9, which row 1 never draws
  EXPECT_FALSE(c->unbounded);
}

TEST(EncoderCostTest, RowsWithoutACommonOutputAreUnbounded) {
  // What paper-mode rows look like: each vertex (almost) encodes as itself.
  Held h;
  h.Add(1, {{1, kOne, 0}});
  h.Add(2, {{2, kOne, 0}});
  const Result<EncoderCost> c = h.Measure({{5, kOne, 0}});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->unbounded);
  EXPECT_EQ(c->delta, 1.0);
}

TEST(EncoderCostTest, OneRowHasNothingToTellApartAndMissingRowsAreSkipped) {
  Held h;
  h.Add(1, Skewed(7, 8), 0.125f);
  HctNeighbour no_row;
  no_row.id = 2;
  h.neighbours.push_back(no_row);
  const Result<EncoderCost> c = h.Measure({}, 0.0f);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rows, 1u);
  EXPECT_EQ(c->epsilon, 0.0);
  EXPECT_EQ(c->delta, 0.0);
  EXPECT_FLOAT_EQ(static_cast<float>(c->truncated_mass), 0.125f);
  // The largest truncated mass of own and neighbours' rows is reported.
  const Result<EncoderCost> with_own = h.Measure(Skewed(7, 8), 0.25f);
  ASSERT_TRUE(with_own.ok());
  EXPECT_FLOAT_EQ(static_cast<float>(with_own->truncated_mass), 0.25f);
}

TEST(EncoderCostTest, ProbabilitiesMatchTheSampler) {
  // The exact masses behind epsilon against SampleCodebookRow's draws: two
  // rows over the same three outputs built as Vose tables; the measured
  // epsilon equals the log ratio of the empirical frequencies within the
  // sampling error.
  const std::vector<CodebookEntry> a = {{1, kOne / 4, 2}, {2, kOne, 1}, {3, kOne / 2, 1}};  // 1/12, 6/12, 5/12
  const std::vector<CodebookEntry> b = {{1, kOne, 0}, {2, kOne, 1}, {3, kOne, 2}};              // 1/3 each
  Held h;
  h.Add(1, a);
  h.Add(2, b);
  const Result<EncoderCost> c = h.Measure();
  ASSERT_TRUE(c.ok());
  // Exact: max(|log((1/12)/(1/3))|, |log((6/12)/(1/3))|, |log((5/12)/(1/3))|) = log 4.
  EXPECT_NEAR(c->epsilon, std::log(4.0), 1e-12);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(5).ok());
  std::map<uint32_t, int> count;
  const int draws = 600000;
  for (int i = 0; i < draws; ++i) ++count[SampleCodebookRow(a, rng).value()];
  // Binomial standard errors at 1e-6 two-sided (5 sigma).
  const double expect[4] = {0, 1.0 / 12, 6.0 / 12, 5.0 / 12};
  for (uint32_t v = 1; v <= 3; ++v) {
    const double p = expect[v];
    EXPECT_NEAR(count[v] / double(draws), p, 5 * std::sqrt(p * (1 - p) / draws)) << v;
  }
}

TEST(EncoderCostTest, MalformedRowsAreDataLoss) {
  Held h;
  h.Add(1, {{7, kOne + 1, 0}});
  EXPECT_EQ(h.Measure().status(), Status::DataLoss());
  Held alias;
  alias.Add(1, {{7, kHalf, 3}});
  EXPECT_EQ(alias.Measure().status(), Status::DataLoss());
  Held outside;
  outside.Add(1, Uniform(7, 8));
  outside.neighbours[0].codebook_offset = 1;  // runs past the pool
  EXPECT_EQ(outside.Measure().status(), Status::DataLoss());
}

}  // namespace
}  // namespace nodefl::fedwalk
