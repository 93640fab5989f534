// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/multi_bit_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "heap_counter.h"
#include "nodefl/platform/host_platform.h"
#include "nodefl/privacy/one_bit_encoder.h"
#include "flaky_entropy.h"
#include "stat_util.h"

namespace nodefl {
namespace {

using testing::ArmMidStreamFailure;
using testing::FlakyEntropy;

constexpr float kAlphaLow = -2.0f;  // alpha of Algorithm 1
constexpr float kBetaHigh = 2.0f;   // beta

MultiBitParams Params(double epsilon, uint32_t m) {
  MultiBitParams p;
  p.lower = kAlphaLow;
  p.upper = kBetaHigh;
  p.epsilon = epsilon;
  p.samples_per_row = m;
  return p;
}

// Line 5 of Algorithm 1, written out independently of the SDK.
double ProbOne(double v, double eps_cell) {
  const double e = std::exp(eps_cell);
  return 1.0 / (e + 1.0) +
         (v - kAlphaLow) / (double(kBetaHigh) - kAlphaLow) * (e - 1.0) / (e + 1.0);
}

std::vector<float> SpreadMatrix(uint32_t rows, uint32_t cols) {
  // Covers both endpoints and the interior.
  const uint32_t cells = rows * cols;
  std::vector<float> h(cells);
  for (uint32_t i = 0; i < cells; ++i) {
    h[i] = kAlphaLow + (kBetaHigh - kAlphaLow) * float(i) / float(cells - 1);
  }
  return h;
}

TEST(MultiBitEncoderTest, EachSampledCellIsChargedEpsilonOverMn) {
  auto per_cell = MultiBitEpsilonPerCell(Params(6.0, 3), 4, 10);
  ASSERT_TRUE(per_cell.ok());
  EXPECT_DOUBLE_EQ(*per_cell, 6.0 / (3 * 4));
  // m = h is allowed: every cell sampled.
  EXPECT_TRUE(MultiBitEpsilonPerCell(Params(1.0, 10), 4, 10).ok());
}

TEST(MultiBitEncoderTest, RejectsBadInputs) {
  const Status bad = Status::InvalidArgument();
  const double nan = std::nan("");
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(0.0, 3), 4, 10).status(), bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(-1.0, 3), 4, 10).status(), bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(nan, 3), 4, 10).status(), bad);
  EXPECT_EQ(
      MultiBitEpsilonPerCell(Params(std::numeric_limits<double>::infinity(), 3), 4, 10).status(),
      bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(1.0, 0), 4, 10).status(), bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(1.0, 11), 4, 10).status(), bad);  // m > h
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(1.0, 3), 0, 10).status(), bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(1.0, 3), 4, 0).status(), bad);
  EXPECT_EQ(MultiBitEpsilonPerCell(Params(1000.0, 1), 1, 10).status(), bad);  // eps/(mn) > max
  MultiBitParams flipped = Params(1.0, 3);
  flipped.lower = kBetaHigh;
  flipped.upper = kAlphaLow;
  EXPECT_EQ(MultiBitEpsilonPerCell(flipped, 4, 10).status(), bad);
  MultiBitParams nan_bound = Params(1.0, 3);
  nan_bound.upper = std::nanf("");
  EXPECT_EQ(MultiBitEpsilonPerCell(nan_bound, 4, 10).status(), bad);
  MultiBitParams huge = Params(1e-3, 1);
  huge.lower = -3e38f;
  huge.upper = 3e38f;
  EXPECT_EQ(MultiBitEpsilonPerCell(huge, 1, 1).status(), bad);  // recovery overflows float

  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(1).ok());
  const MultiBitParams p = Params(1.0, 2);
  std::vector<float> h(6, 0.0f);
  std::vector<int8_t> out(6, 7);
  EXPECT_EQ(EncodeMultiBit(rng, p, h, 2, 4, out), bad);  // 6 != 2 * 4
  std::vector<int8_t> short_out(5, 7);
  EXPECT_EQ(EncodeMultiBit(rng, p, h, 2, 3, short_out), bad);
  EXPECT_EQ(EncodeMultiBit(rng, Params(1.0, 4), h, 2, 3, out), bad);
  h[4] = std::nanf("");
  EXPECT_EQ(EncodeMultiBit(rng, p, h, 2, 3, out), bad);
  h[4] = 2.5f;
  EXPECT_EQ(EncodeMultiBit(rng, p, h, 2, 3, out), Status::OutOfRange());
  h[4] = -2.5f;
  EXPECT_EQ(EncodeMultiBit(rng, p, h, 2, 3, out), Status::OutOfRange());
  h[4] = 0.0f;
  Drbg unseeded;
  EXPECT_EQ(EncodeMultiBit(unseeded, p, h, 2, 3, out), Status::FailedPrecondition());
  for (int8_t v : out) EXPECT_EQ(v, 7);  // nothing released by a rejected call

  std::vector<int8_t> encoded = {0, 1, -1, 0, 2, 0};
  std::vector<float> rec(6, 7.0f);
  EXPECT_EQ(RecoverMultiBit(p, encoded, 2, 3, rec), bad);
  for (float v : rec) EXPECT_EQ(v, 7.0f);
  encoded[4] = 1;
  EXPECT_EQ(RecoverMultiBit(p, encoded, 3, 3, rec), bad);
  EXPECT_EQ(RecoverMultiBit(Params(0.0, 2), encoded, 2, 3, rec), bad);
  EXPECT_TRUE(RecoverMultiBit(p, encoded, 2, 3, rec).ok());
}

TEST(MultiBitEncoderTest, RecoveryFollowsTheRectifier) {
  const MultiBitParams p = Params(6.0, 3);
  const double eps_cell = 6.0 / (3 * 4);
  std::vector<int8_t> encoded(40, 0);
  encoded[0] = -1;
  encoded[1] = 1;
  std::vector<float> rec(40);
  ASSERT_TRUE(RecoverMultiBit(p, encoded, 4, 10, rec).ok());
  const double e = std::exp(eps_cell);
  const double half = (double(kBetaHigh) - kAlphaLow) / 2;
  EXPECT_FLOAT_EQ(rec[0],
                  static_cast<float>(kAlphaLow + half * (1 - (10.0 / 3) * (e + 1) / (e - 1))));
  EXPECT_FLOAT_EQ(rec[1],
                  static_cast<float>(kAlphaLow + half * (1 + (10.0 / 3) * (e + 1) / (e - 1))));
  EXPECT_EQ(rec[2], static_cast<float>(kAlphaLow + half));
}

// The "draws per cell" chi-square for a sampler that takes exactly k of N
// cells per encoding: over T encodings, counts O_c have mean Tq (q = k/N) and
// covariance T q(1-q) N/(N-1) (I - J/N) (sampling without replacement), so
//   X = (N-1)/N * sum_c (O_c - Tq)^2 / (T q (1-q))
// is asymptotically chi-square with N - 1 degrees of freedom.
double SamplingChiSquare(const std::vector<double>& counts, double trials, double q) {
  const double cells = double(counts.size());
  double s = 0.0;
  for (double o : counts) s += (o - trials * q) * (o - trials * q);
  return (cells - 1) / cells * s / (trials * q * (1 - q));
}

TEST(MultiBitEncoderTest, ExactlyMnCellsAreSampledEachWithProbabilityMOverH) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(4242).ok());
  constexpr uint32_t kRows = 4, kCols = 10, kM = 3;
  constexpr int kTrials = 3000;  // expected count per cell 900
  const MultiBitParams p = Params(6.0, kM);
  const std::vector<float> h = SpreadMatrix(kRows, kCols);
  std::vector<int8_t> out(kRows * kCols);
  std::vector<double> counts(kRows * kCols, 0.0);
  for (int t = 0; t < kTrials; ++t) {
    ASSERT_TRUE(EncodeMultiBit(rng, p, h, kRows, kCols, out).ok());
    uint32_t nonzero = 0;
    for (size_t c = 0; c < out.size(); ++c) {
      ASSERT_TRUE(out[c] == -1 || out[c] == 0 || out[c] == 1);
      nonzero += (out[c] != 0);
      counts[c] += (out[c] != 0);
    }
    ASSERT_EQ(nonzero, kM * kRows);  // |S| = m n, as the Appendix B proof needs
  }
  const double q = double(kM) / kCols;
  const double crit = testing::ChiSquareCritical(kRows * kCols - 1);
  EXPECT_LT(SamplingChiSquare(counts, kTrials, q), crit);

  // Power: a naive sampler (independent Bernoulli(m/h) per cell, stopping at
  // m n) under-samples the last cells; the same statistic rejects it.
  std::vector<double> naive(kRows * kCols, 0.0);
  for (int t = 0; t < kTrials; ++t) {
    uint32_t taken = 0;
    for (size_t c = 0; c < naive.size(); ++c) {
      if (taken < kM * kRows && rng.BernoulliRational(kM, kCols)) {
        naive[c] += 1;
        ++taken;
      }
    }
  }
  EXPECT_GT(SamplingChiSquare(naive, kTrials, q), crit);

  // Edge case m = h: every cell is sampled.
  ASSERT_TRUE(EncodeMultiBit(rng, Params(6.0, kCols), h, kRows, kCols, out).ok());
  for (int8_t v : out) EXPECT_NE(v, 0);
}

TEST(MultiBitEncoderTest, RectifiedRecoveryIsUnbiasedAndTheCheckHasPower) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(777).ok());
  constexpr uint32_t kRows = 4, kCols = 10, kM = 3;
  constexpr int kTrials = 4000;
  const double eps = 12.0;  // eps/(mn) = 1
  const double eps_cell = eps / (kM * kRows);
  const MultiBitParams p = Params(eps, kM);
  const std::vector<float> h = SpreadMatrix(kRows, kCols);
  std::vector<int8_t> out(h.size());
  std::vector<float> rec(h.size());
  std::vector<double> sum(h.size(), 0.0), sum_encoded(h.size(), 0.0);
  for (int t = 0; t < kTrials; ++t) {
    ASSERT_TRUE(EncodeMultiBit(rng, p, h, kRows, kCols, out).ok());
    ASSERT_TRUE(RecoverMultiBit(p, out, kRows, kCols, rec).ok());
    for (size_t c = 0; c < h.size(); ++c) {
      sum[c] += rec[c];
      sum_encoded[c] += out[c];
    }
  }
  const double q = double(kM) / kCols;
  const double e = std::exp(eps_cell);
  const double half_span =
      (double(kBetaHigh) - kAlphaLow) / 2 * (double(kCols) / kM) * (e + 1) / (e - 1);
  const double mid = (double(kAlphaLow) + kBetaHigh) / 2;
  const double z = testing::ZBound(testing::kAlpha / double(h.size()));  // Bonferroni
  int rejected_unscaled = 0;
  for (size_t c = 0; c < h.size(); ++c) {
    // H* = 0 w.p. 1-q, else +-1: E[H*] = q(2p-1), E[H*^2] = q. H^ is affine
    // in H* with slope half_span.
    const double pr = ProbOne(h[c], eps_cell);
    const double mean_star = q * (2 * pr - 1);
    const double sd = half_span * std::sqrt((q - mean_star * mean_star) / kTrials);
    EXPECT_NEAR(sum[c] / kTrials, h[c], z * sd) << "cell " << c;
    // Power: a rectifier that forgets the h/m sampling factor.
    const double unscaled = mid + sum_encoded[c] / kTrials * half_span * (double(kM) / kCols);
    rejected_unscaled += std::fabs(unscaled - h[c]) > z * sd;
  }
  // Every cell far enough from the midpoint exposes the bug; the two end
  // cells certainly do.
  EXPECT_GE(rejected_unscaled, 2);
  const double end_unscaled = mid + sum_encoded.back() / kTrials * half_span * (double(kM) / kCols);
  const double pr_end = ProbOne(h.back(), eps_cell);
  const double sd_end =
      half_span * std::sqrt((q - q * q * (2 * pr_end - 1) * (2 * pr_end - 1)) / kTrials);
  EXPECT_GT(std::fabs(end_unscaled - h.back()), z * sd_end);
}

// log P(out | beta) / P(out | alpha) for out = +1 and log P(-1 | alpha) /
// P(-1 | beta), per cell, when every cell of the matrix is alpha or beta.
// Exactly mn cells are sampled per encoding and each sampled cell is an
// independent Bernoulli, so the number of +1s among them is Binomial(T mn, p).
struct CellLogRatios {
  double plus = 0.0;
  double minus = 0.0;
  double zeros_alpha = 0.0;
  double zeros_beta = 0.0;
};

CellLogRatios MeasureCellLogRatios(Drbg& rng, const MultiBitParams& p, uint32_t rows, uint32_t cols,
                                   int trials) {
  const std::vector<float> ha(rows * cols, kAlphaLow), hb(rows * cols, kBetaHigh);
  std::vector<int8_t> out(rows * cols);
  double plus_a = 0, plus_b = 0, minus_a = 0, minus_b = 0;
  CellLogRatios r;
  for (int t = 0; t < trials; ++t) {
    EXPECT_TRUE(EncodeMultiBit(rng, p, ha, rows, cols, out).ok());
    for (int8_t v : out) {
      plus_a += (v == 1);
      minus_a += (v == -1);
      r.zeros_alpha += (v == 0);
    }
    EXPECT_TRUE(EncodeMultiBit(rng, p, hb, rows, cols, out).ok());
    for (int8_t v : out) {
      plus_b += (v == 1);
      minus_b += (v == -1);
      r.zeros_beta += (v == 0);
    }
  }
  r.plus = std::log(plus_b / plus_a);
  r.minus = std::log(minus_a / minus_b);
  return r;
}

TEST(MultiBitEncoderTest, PerCellLikelihoodRatioIsBoundedAndTheCheckHasPower) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(31337).ok());
  constexpr uint32_t kRows = 6, kCols = 5, kM = 4;
  constexpr int kTrials = 1500;
  const double eps = 12.0;
  const double eps_cell = eps / (kM * kRows);  // 0.5
  const double n_bits = double(kTrials) * kM * kRows;
  const double pa = ProbOne(kAlphaLow, eps_cell), pb = ProbOne(kBetaHigh, eps_cell);
  // Delta method: Var(log p^) ~= (1 - p)/(n p); the +1 and -1 cases have the
  // same variance because P(-1 | alpha) = P(+1 | beta).
  const double tol =
      testing::ZBound() * std::sqrt((1 - pb) / (n_bits * pb) + (1 - pa) / (n_bits * pa));

  const CellLogRatios r = MeasureCellLogRatios(rng, Params(eps, kM), kRows, kCols, kTrials);
  EXPECT_LE(r.plus, eps_cell + tol);
  EXPECT_LE(r.minus, eps_cell + tol);
  EXPECT_GE(r.plus, eps_cell - tol);  // tight: the mechanism spends what it says
  EXPECT_GE(r.minus, eps_cell - tol);
  // "Not sampled" carries no information: its probability is the same (and
  // exactly the same count) under both inputs.
  EXPECT_EQ(r.zeros_alpha, r.zeros_beta);

  // Power: an encoder that charges each cell eps/m (forgetting the n rows,
  // the "m values" reading with the per-cell budget of the vector encoder).
  const CellLogRatios wrong =
      MeasureCellLogRatios(rng, Params(eps * kRows, kM), kRows, kCols, kTrials);
  EXPECT_GT(wrong.plus, eps_cell + tol);
  EXPECT_GT(wrong.minus, eps_cell + tol);
}

TEST(MultiBitEncoderTest, DrbgFailureMidStreamReleasesNothing) {
  Drbg rng;
  FlakyEntropy flaky;
  EntropySource source;
  ArmMidStreamFailure(rng, flaky, source);
  const std::vector<float> h = SpreadMatrix(8, 16);
  std::vector<int8_t> out(h.size(), 7);
  const Status s = EncodeMultiBit(rng, Params(4.0, 8), h, 8, 16, out);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s, rng.status());
  for (int8_t v : out) EXPECT_EQ(v, 0);  // scrubbed to "nothing sampled"
}

TEST(MultiBitEncoderTest, NoPublicFunctionAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(3).ok());
  float h[12];
  int8_t out[12];
  float rec[12];
  for (int i = 0; i < 12; ++i) h[i] = kAlphaLow + (kBetaHigh - kAlphaLow) * float(i) / 11.0f;
  const MultiBitParams p = Params(2.0, 2);
  NODEFL_EXPECT_NO_HEAP({
    ASSERT_TRUE(MultiBitEpsilonPerCell(p, 3, 4).ok());
    ASSERT_TRUE(EncodeMultiBit(rng, p, h, 3, 4, out).ok());
    ASSERT_TRUE(RecoverMultiBit(p, out, 3, 4, rec).ok());
    EXPECT_EQ(EncodeMultiBit(rng, p, h, 4, 4, out), Status::InvalidArgument());
  });
}

}  // namespace
}  // namespace nodefl
