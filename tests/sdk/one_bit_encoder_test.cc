// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/one_bit_encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "heap_counter.h"
#include "nodefl/platform/host_platform.h"
#include "flaky_entropy.h"
#include "stat_util.h"

namespace nodefl {
namespace {

using testing::ArmMidStreamFailure;
using testing::FlakyEntropy;

constexpr float kA = -1.0f;
constexpr float kB = 3.0f;

// Eq. 26 written out independently of the SDK's tanh form.
double ProbOne(double x, double a, double b, double eps) {
  const double e = std::exp(eps);
  return 1.0 / (e + 1.0) + (x - a) / (b - a) * (e - 1.0) / (e + 1.0);
}

// Eq. 29's multiplier (b - a)(e+1)/(e-1) of (x' - 1/2).
double RecoveryScale(double a, double b, double eps) {
  const double e = std::exp(eps);
  return (b - a) * (e + 1.0) / (e - 1.0);
}

OneBitParams Params(double eps_per_element, uint32_t workload, uint32_t dims) {
  OneBitParams p;
  p.lower = kA;
  p.upper = kB;
  p.epsilon_per_element = eps_per_element;
  p.workload = workload;
  p.dims = dims;
  return p;
}

TEST(OneBitEncoderTest, ModesSetThePerElementBudgetAndCostsAreTheTrueOnes) {
  // d = 12, wl = 4, eps = 2. Paper: eps' = eps wl / d; one receiver sees
  // 3 elements (= eps, Theorem 4), all receivers together eps * wl.
  auto paper = MakeOneBitParams(PrivacyMode::kPaper, 2.0, 4, 12, kA, kB);
  ASSERT_TRUE(paper.ok());
  EXPECT_DOUBLE_EQ(paper->epsilon_per_element, 2.0 * 4 / 12);
  auto paper_cost = OneBitEpsilon(*paper);
  ASSERT_TRUE(paper_cost.ok());
  EXPECT_DOUBLE_EQ(paper_cost->per_receiver, 2.0);
  EXPECT_DOUBLE_EQ(paper_cost->all_receivers, 8.0);

  // Strict: the union of all receivers is held to eps.
  auto strict = MakeOneBitParams(PrivacyMode::kStrict, 2.0, 4, 12, kA, kB);
  ASSERT_TRUE(strict.ok());
  EXPECT_DOUBLE_EQ(strict->epsilon_per_element, 2.0 / 12);
  auto strict_cost = OneBitEpsilon(*strict);
  ASSERT_TRUE(strict_cost.ok());
  EXPECT_DOUBLE_EQ(strict_cost->per_receiver, 0.5);
  EXPECT_DOUBLE_EQ(strict_cost->all_receivers, 2.0);

  // wl does not divide d: some receiver gets ceil(10/4) = 3 elements, so the
  // paper's per-receiver claim of eps is exceeded; the cost says so.
  auto uneven = MakeOneBitParams(PrivacyMode::kPaper, 2.0, 4, 10, kA, kB);
  ASSERT_TRUE(uneven.ok());
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*uneven)->per_receiver, 3 * 0.8);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*uneven)->all_receivers, 8.0);

  // More receivers than dims: each receiver gets at most one element.
  auto sparse = MakeOneBitParams(PrivacyMode::kStrict, 3.0, 5, 3, kA, kB);
  ASSERT_TRUE(sparse.ok());
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*sparse)->per_receiver, 1.0);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*sparse)->all_receivers, 3.0);

  EXPECT_EQ(kDefaultPrivacyMode, PrivacyMode::kStrict);
}

TEST(OneBitEncoderTest, RejectsBadParameters) {
  const double inf = std::numeric_limits<double>::infinity();
  const float finf = std::numeric_limits<float>::infinity();
  const double nan = std::nan("");
  const PrivacyMode m = PrivacyMode::kStrict;
  const Status bad = Status::InvalidArgument();
  EXPECT_EQ(MakeOneBitParams(m, 0.0, 2, 4, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, -1.0, 2, 4, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, nan, 2, 4, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, inf, 2, 4, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 0, 4, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 2, 0, kA, kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 2, 4, kB, kA).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 2, 4, kA, kA).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 2, 4, std::nanf(""), kB).status(), bad);
  EXPECT_EQ(MakeOneBitParams(m, 1.0, 2, 4, kA, finf).status(), bad);
  // eps' = 10 * 10 / 2 = 50 > kMaxEpsilonPerBit.
  EXPECT_EQ(MakeOneBitParams(PrivacyMode::kPaper, 10.0, 10, 2, kA, kB).status(), bad);
  EXPECT_TRUE(MakeOneBitParams(m, kMaxEpsilonPerBit, 1, 1, kA, kB).ok());
  // A recovered 0 or 1 would overflow float.
  EXPECT_EQ(MakeOneBitParams(m, 1e-3, 1, 1, -3e38f, 3e38f).status(), bad);
  // eps' underflows to a denormal whose recovery factor is infinite.
  EXPECT_EQ(MakeOneBitParams(m, 1e-310, 1, 1, kA, kB).status(), bad);

  OneBitParams invalid = Params(0.0, 1, 1);
  EXPECT_EQ(OneBitEpsilon(invalid).status(), bad);
  invalid = Params(1.0, 0, 1);
  EXPECT_EQ(OneBitEpsilon(invalid).status(), bad);
}

TEST(OneBitEncoderTest, RejectsBadInputsBeforeDrawing) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(1).ok());
  const OneBitParams p = Params(1.0, 2, 4);
  std::vector<float> x = {kA, 0.0f, 1.0f, kB};
  std::vector<float> out(4, 7.0f);
  std::vector<uint32_t> owner = {0, 1, 0, 1};

  std::vector<float> short_x(3, 0.0f);
  EXPECT_EQ(EncodeOneBit(rng, p, short_x, out), Status::InvalidArgument());
  std::vector<float> short_out(3);
  EXPECT_EQ(EncodeOneBit(rng, p, x, short_out), Status::InvalidArgument());
  std::vector<float> with_nan = {0.0f, std::nanf(""), 0.0f, 0.0f};
  EXPECT_EQ(EncodeOneBit(rng, p, with_nan, out), Status::InvalidArgument());
  std::vector<float> too_big = {0.0f, 3.0001f, 0.0f, 0.0f};
  EXPECT_EQ(EncodeOneBit(rng, p, too_big, out), Status::OutOfRange());
  std::vector<float> too_small = {-1.0001f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(EncodeOneBitPartial(rng, p, too_small, owner, 0, out), Status::OutOfRange());
  EXPECT_EQ(EncodeOneBit(rng, Params(0.0, 2, 4), x, out), Status::InvalidArgument());

  EXPECT_EQ(EncodeOneBitPartial(rng, p, x, owner, 2, out), Status::InvalidArgument());
  std::vector<uint32_t> bad_owner = {0, 2, 0, 1};
  EXPECT_EQ(EncodeOneBitPartial(rng, p, x, bad_owner, 0, out), Status::InvalidArgument());
  std::vector<uint32_t> short_owner = {0, 1, 0};
  EXPECT_EQ(EncodeOneBitPartial(rng, p, x, short_owner, 0, out), Status::InvalidArgument());
  // Receiver 0 holding 3 of 4 dims (> ceil(4/2)) would exceed per_receiver.
  std::vector<uint32_t> unbalanced = {0, 0, 0, 1};
  EXPECT_EQ(EncodeOneBitPartial(rng, p, x, unbalanced, 0, out), Status::InvalidArgument());
  for (float v : out) EXPECT_EQ(v, 7.0f);  // nothing was released

  // An unseeded DRBG is refused before any element is written.
  Drbg unseeded;
  EXPECT_EQ(EncodeOneBit(unseeded, p, x, out), Status::FailedPrecondition());
  EXPECT_EQ(EncodeOneBitPartial(unseeded, p, x, owner, 0, out), Status::FailedPrecondition());
  std::vector<uint32_t> assignment(4);
  EXPECT_EQ(AssignDimensionsToReceivers(unseeded, 2, assignment), Status::FailedPrecondition());
  for (float v : out) EXPECT_EQ(v, 7.0f);

  EXPECT_EQ(AssignDimensionsToReceivers(rng, 0, assignment), Status::InvalidArgument());
  std::vector<uint32_t> empty;
  EXPECT_EQ(AssignDimensionsToReceivers(rng, 2, empty), Status::InvalidArgument());

  std::vector<float> encoded = {0.0f, 0.5f, 1.0f, 0.25f};
  std::vector<float> recovered(4, 7.0f);
  EXPECT_EQ(RecoverOneBit(p, encoded, recovered), Status::InvalidArgument());
  for (float v : recovered) EXPECT_EQ(v, 7.0f);
  encoded[3] = 1.0f;
  EXPECT_EQ(RecoverOneBit(p, encoded, short_out), Status::InvalidArgument());
  EXPECT_EQ(RecoverOneBit(Params(1.0, 0, 4), encoded, recovered), Status::InvalidArgument());
  EXPECT_TRUE(RecoverOneBit(p, encoded, recovered).ok());
}

TEST(OneBitEncoderTest, RecoveryMapsBitsToEq27) {
  const double eps = 0.7;
  const OneBitParams p = Params(eps, 1, 3);
  std::vector<float> encoded = {0.0f, 0.5f, 1.0f};
  std::vector<float> recovered(3);
  ASSERT_TRUE(RecoverOneBit(p, encoded, recovered).ok());
  const double e = std::exp(eps);
  const double mid = (double(kA) + kB) / 2;
  EXPECT_FLOAT_EQ(recovered[0], static_cast<float>((kA - kB) / 2.0 * (e + 1) / (e - 1) + mid));
  EXPECT_EQ(recovered[1], static_cast<float>(mid));
  EXPECT_FLOAT_EQ(recovered[2], static_cast<float>((kB - kA) / 2.0 * (e + 1) / (e - 1) + mid));
  // In place.
  ASSERT_TRUE(RecoverOneBit(p, encoded, encoded).ok());
  EXPECT_EQ(encoded, recovered);
}

// Mean of the recovered value of x over `reps` encodings of a dims-long
// feature filled with x, computed with the given encoder budget and recovery.
struct MeanRun {
  double mean_correct = 0.0;   // RecoverOneBit with the encoder's own budget
  double mean_unscaled = 0.0;  // bug: recovery without (e+1)/(e-1)
};

MeanRun RunMean(Drbg& rng, float x, double encode_eps, double recover_eps, int reps,
                uint32_t dims) {
  const OneBitParams enc = Params(encode_eps, 1, dims);
  const OneBitParams rec = Params(recover_eps, 1, dims);
  std::vector<float> in(dims, x), bits(dims), recovered(dims);
  double sum = 0.0, sum_unscaled = 0.0;
  for (int r = 0; r < reps; ++r) {
    EXPECT_TRUE(EncodeOneBit(rng, enc, in, bits).ok());
    EXPECT_TRUE(RecoverOneBit(rec, bits, recovered).ok());
    for (uint32_t i = 0; i < dims; ++i) {
      EXPECT_TRUE(bits[i] == 0.0f || bits[i] == 1.0f);
      sum += recovered[i];
      sum_unscaled += (bits[i] - 0.5) * (double(kB) - kA) + (double(kA) + kB) / 2;
    }
  }
  const double n = double(reps) * dims;
  return {sum / n, sum_unscaled / n};
}

TEST(OneBitEncoderTest, FullEncodingRecoveryIsUnbiasedTheorem3) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(2024).ok());
  const std::vector<float> xs = {kA, kA + 0.3f * (kB - kA), (kA + kB) / 2, kB};
  const std::vector<double> epss = {0.1, 1.0, 3.0};
  constexpr int kReps = 20;
  constexpr uint32_t kDims = 1000;
  const double n = double(kReps) * kDims;
  // Bonferroni over the 12 (x, eps') checks.
  const double z = testing::ZBound(testing::kAlpha / double(xs.size() * epss.size()));
  for (double eps : epss) {
    for (float x : xs) {
      const MeanRun run = RunMean(rng, x, eps, eps, kReps, kDims);
      const double p = ProbOne(x, kA, kB, eps);
      // Var(x'') = scale^2 p (1 - p) per element (Eq. 29 is affine in x').
      const double sd = RecoveryScale(kA, kB, eps) * std::sqrt(p * (1 - p) / n);
      EXPECT_NEAR(run.mean_correct, x, z * sd) << "x=" << x << " eps'=" << eps;
    }
  }
}

TEST(OneBitEncoderTest, UnbiasednessCheckRejectsWrongScaleOrBudget) {
  // Power: the same statistic, on the worst-case input x = b at eps' = 1,
  // rejects a recovery that forgets (e+1)/(e-1) and an encoder that spends
  // 2 eps' while the recovery assumes eps'.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(77).ok());
  constexpr int kReps = 20;
  constexpr uint32_t kDims = 1000;
  const double n = double(kReps) * kDims;
  const double eps = 1.0;
  const double z = testing::ZBound(testing::kAlpha / 12.0);
  const double p = ProbOne(kB, kA, kB, eps);
  const double sd = RecoveryScale(kA, kB, eps) * std::sqrt(p * (1 - p) / n);

  const MeanRun right = RunMean(rng, kB, eps, eps, kReps, kDims);
  EXPECT_LT(std::fabs(right.mean_correct - kB), z * sd);
  EXPECT_GT(std::fabs(right.mean_unscaled - kB), z * sd);

  const MeanRun doubled = RunMean(rng, kB, 2 * eps, eps, kReps, kDims);
  EXPECT_GT(std::fabs(doubled.mean_correct - kB), z * sd);
}

TEST(OneBitEncoderTest, PartialEncodingSendsEachDimToExactlyOneReceiver) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(31).ok());
  constexpr uint32_t kDims = 37;
  constexpr uint32_t kWorkload = 5;
  constexpr int kTrials = 1500;
  const double eps = 1.0;
  const OneBitParams p = Params(eps, kWorkload, kDims);
  const float mid = static_cast<float>((double(kA) + kB) / 2);

  std::vector<float> x(kDims);
  for (uint32_t i = 0; i < kDims; ++i) x[i] = kA + (kB - kA) * float(i) / float(kDims - 1);
  std::vector<uint32_t> owner(kDims);
  std::vector<std::vector<float>> enc(kWorkload, std::vector<float>(kDims));
  std::vector<float> rec(kDims);
  std::vector<double> sum(kDims, 0.0);
  for (int t = 0; t < kTrials; ++t) {
    ASSERT_TRUE(AssignDimensionsToReceivers(rng, kWorkload, owner).ok());
    std::vector<int> count(kWorkload, 0);
    for (uint32_t k : owner) {
      ASSERT_LT(k, kWorkload);
      count[k]++;
    }
    // Balanced: 37 = 5 * 7 + 2, so two receivers get 8 and three get 7.
    int eights = 0;
    for (int c : count) {
      ASSERT_TRUE(c == 7 || c == 8);
      eights += (c == 8);
    }
    ASSERT_EQ(eights, 2);
    for (uint32_t k = 0; k < kWorkload; ++k) {
      ASSERT_TRUE(EncodeOneBitPartial(rng, p, x, owner, k, enc[k]).ok());
    }
    for (uint32_t k = 0; k < kWorkload; ++k) {
      ASSERT_TRUE(RecoverOneBit(p, enc[k], rec).ok());
      for (uint32_t i = 0; i < kDims; ++i) {
        if (owner[i] == k) {
          ASSERT_TRUE(enc[k][i] == 0.0f || enc[k][i] == 1.0f);
          sum[i] += rec[i];
        } else {
          ASSERT_EQ(enc[k][i], 0.5f);
          ASSERT_EQ(rec[i], mid);  // unsent dims carry no information
        }
      }
    }
  }
  // Sent dims: each of the 37 per-dim means is unbiased (Bonferroni).
  const double z = testing::ZBound(testing::kAlpha / kDims);
  for (uint32_t i = 0; i < kDims; ++i) {
    const double pr = ProbOne(x[i], kA, kB, eps);
    const double sd = RecoveryScale(kA, kB, eps) * std::sqrt(pr * (1 - pr) / kTrials);
    EXPECT_NEAR(sum[i] / kTrials, x[i], z * sd) << "dim " << i;
  }
}

// Chi-square of "which receiver got dim `dim`" and the most extreme z-score
// of "receiver k got one of the larger bins", over assignments produced by
// `assign`.
struct PartitionStats {
  double chi_square_dim0 = 0.0;
  double chi_square_last = 0.0;
  double max_abs_z_large_bin = 0.0;
};

template <typename Assign>
PartitionStats MeasurePartition(Assign assign, uint32_t dims, uint32_t workload, int trials) {
  std::vector<uint32_t> owner(dims);
  std::vector<double> first(workload, 0.0), last(workload, 0.0), large(workload, 0.0);
  const uint32_t base = dims / workload;
  for (int t = 0; t < trials; ++t) {
    assign(owner);
    first[owner[0]] += 1;
    last[owner[dims - 1]] += 1;
    std::vector<uint32_t> count(workload, 0);
    for (uint32_t k : owner) count[k]++;
    for (uint32_t k = 0; k < workload; ++k) large[k] += (count[k] > base);
  }
  PartitionStats s;
  // Under uniformity each receiver holds dim 0 with probability 1/wl.
  const std::vector<double> expected(workload, double(trials) / workload);
  s.chi_square_dim0 = testing::ChiSquareStatistic(first, expected);
  s.chi_square_last = testing::ChiSquareStatistic(last, expected);
  // Each receiver gets a large bin with probability (d mod wl)/wl.
  const double q = double(dims % workload) / workload;
  for (uint32_t k = 0; k < workload; ++k) {
    const double zk = (large[k] - trials * q) / std::sqrt(trials * q * (1 - q));
    s.max_abs_z_large_bin = std::fmax(s.max_abs_z_large_bin, std::fabs(zk));
  }
  return s;
}

TEST(OneBitEncoderTest, PartitionIsUniformAndTheCheckHasPower) {
  constexpr uint32_t kDims = 37;
  constexpr uint32_t kWorkload = 5;
  constexpr int kTrials = 2000;  // expected count 400 per cell
  const double chi_crit = testing::ChiSquareCritical(kWorkload - 1);
  const double z_crit = testing::ZBound(testing::kAlpha / kWorkload);

  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(5).ok());
  const PartitionStats ok = MeasurePartition(
      [&](std::vector<uint32_t>& o) {
        ASSERT_TRUE(AssignDimensionsToReceivers(rng, kWorkload, o).ok());
      },
      kDims, kWorkload, kTrials);
  EXPECT_LT(ok.chi_square_dim0, chi_crit);
  EXPECT_LT(ok.chi_square_last, chi_crit);
  EXPECT_LT(ok.max_abs_z_large_bin, z_crit);

  // Bug 1: round robin without the shuffle.
  const PartitionStats unshuffled = MeasurePartition(
      [&](std::vector<uint32_t>& o) {
        for (uint32_t i = 0; i < kDims; ++i) o[i] = i % kWorkload;
      },
      kDims, kWorkload, kTrials);
  EXPECT_GT(unshuffled.chi_square_dim0, chi_crit);
  // Bug 2: shuffled, but the large bins always go to receivers 0 and 1.
  const PartitionStats fixed_large = MeasurePartition(
      [&](std::vector<uint32_t>& o) {
        for (uint32_t i = 0; i < kDims; ++i) o[i] = i % kWorkload;
        for (uint32_t i = kDims - 1; i > 0; --i) {
          const uint32_t j = static_cast<uint32_t>(rng.UniformBelow(i + 1));
          std::swap(o[i], o[j]);
        }
      },
      kDims, kWorkload, kTrials);
  EXPECT_GT(fixed_large.max_abs_z_large_bin, z_crit);
}

TEST(OneBitEncoderTest, MoreReceiversThanDimsLeavesSomeEmpty) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(8).ok());
  auto p = MakeOneBitParams(PrivacyMode::kStrict, 1.0, 5, 3, kA, kB);
  ASSERT_TRUE(p.ok());
  std::vector<uint32_t> owner(3);
  ASSERT_TRUE(AssignDimensionsToReceivers(rng, 5, owner).ok());
  EXPECT_NE(owner[0], owner[1]);
  EXPECT_NE(owner[0], owner[2]);
  EXPECT_NE(owner[1], owner[2]);
  std::vector<float> x = {0.0f, 1.0f, 2.0f}, out(3);
  int sent = 0;
  for (uint32_t k = 0; k < 5; ++k) {
    ASSERT_TRUE(EncodeOneBitPartial(rng, *p, x, owner, k, out).ok());
    for (float v : out) sent += (v != 0.5f);
  }
  EXPECT_EQ(sent, 3);
}

// log of the empirical likelihood ratios of the two outputs between the
// worst-case neighbours x = b and x = a.
struct LogRatios {
  double one = 0.0;   // log P(1 | b) / P(1 | a)
  double zero = 0.0;  // log P(0 | a) / P(0 | b)
};

LogRatios MeasureLogRatios(Drbg& rng, double eps, int reps, uint32_t dims) {
  const OneBitParams p = Params(eps, 1, dims);
  std::vector<float> xa(dims, kA), xb(dims, kB), bits(dims);
  double ones_a = 0, ones_b = 0;
  for (int r = 0; r < reps; ++r) {
    EXPECT_TRUE(EncodeOneBit(rng, p, xa, bits).ok());
    for (float v : bits) ones_a += v;
    EXPECT_TRUE(EncodeOneBit(rng, p, xb, bits).ok());
    for (float v : bits) ones_b += v;
  }
  const double n = double(reps) * dims;
  return {std::log(ones_b / ones_a), std::log((n - ones_a) / (n - ones_b))};
}

// Delta method: Var(log p^) ~= (1 - p)/(n p), the two samples independent.
double LogRatioTolerance(double pa, double pb, double n) {
  return testing::ZBound() * std::sqrt((1 - pb) / (n * pb) + (1 - pa) / (n * pa));
}

TEST(OneBitEncoderTest, LikelihoodRatioIsBoundedByEpsilonAndTight) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(99).ok());
  constexpr int kReps = 40;
  constexpr uint32_t kDims = 1000;
  const double n = double(kReps) * kDims;
  for (double eps : {0.5, 2.0}) {
    const double pa = ProbOne(kA, kA, kB, eps), pb = ProbOne(kB, kA, kB, eps);
    EXPECT_NEAR(pb / pa, std::exp(eps), 1e-12 * std::exp(eps));  // the worst case is exactly e^eps'
    const LogRatios r = MeasureLogRatios(rng, eps, kReps, kDims);
    const double tol_one = LogRatioTolerance(pa, pb, n);
    const double tol_zero = LogRatioTolerance(1 - pb, 1 - pa, n);
    EXPECT_LE(r.one, eps + tol_one) << eps;
    EXPECT_LE(r.zero, eps + tol_zero) << eps;
    // ... and the bound is attained: the mechanism spends what it says.
    EXPECT_GE(r.one, eps - tol_one) << eps;
    EXPECT_GE(r.zero, eps - tol_zero) << eps;
  }
}

TEST(OneBitEncoderTest, LikelihoodRatioCheckRejectsAnEncoderSpendingTwice) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(100).ok());
  constexpr int kReps = 40;
  constexpr uint32_t kDims = 1000;
  const double eps = 0.5;
  const double pa = ProbOne(kA, kA, kB, eps), pb = ProbOne(kB, kA, kB, eps);
  const double tol = LogRatioTolerance(pa, pb, double(kReps) * kDims);
  const LogRatios r = MeasureLogRatios(rng, 2 * eps, kReps, kDims);
  EXPECT_GT(r.one, eps + tol);
  EXPECT_GT(r.zero, eps + tol);
}

TEST(OneBitEncoderTest, DrbgFailureMidStreamReleasesNothing) {
  const OneBitParams p = Params(1.0, 2, 64);
  std::vector<float> x(64, kB), out(64, 7.0f);
  std::vector<uint32_t> owner(64);
  {
    Drbg rng;
    FlakyEntropy flaky;
    EntropySource source;
    ArmMidStreamFailure(rng, flaky, source);
    const Status s = EncodeOneBit(rng, p, x, out);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s, rng.status());
    for (float v : out) EXPECT_EQ(v, 0.5f);  // scrubbed, not a biased release
  }
  {
    Drbg rng;
    FlakyEntropy flaky;
    EntropySource source;
    ArmMidStreamFailure(rng, flaky, source);
    for (uint32_t i = 0; i < 64; ++i) owner[i] = i % 2;
    std::fill(out.begin(), out.end(), 7.0f);
    EXPECT_FALSE(EncodeOneBitPartial(rng, p, x, owner, 0, out).ok());
    for (float v : out) EXPECT_EQ(v, 0.5f);
  }
  {
    Drbg rng;
    FlakyEntropy flaky;
    EntropySource source;
    ArmMidStreamFailure(rng, flaky, source);
    EXPECT_FALSE(AssignDimensionsToReceivers(rng, 3, owner).ok());
  }
}

TEST(OneBitEncoderTest, PackedFormRoundTripsAndRejectsGarbage) {
  EXPECT_EQ(OneBitPackedSize(0), 0u);
  EXPECT_EQ(OneBitPackedSize(4), 1u);
  EXPECT_EQ(OneBitPackedSize(5), 2u);
  std::vector<float> encoded = {0.0f, 1.0f, 0.5f, 1.0f, 0.5f, 0.0f, 1.0f};
  std::vector<uint8_t> packed(OneBitPackedSize(encoded.size()));
  ASSERT_TRUE(PackOneBit(encoded, packed).ok());
  // 0 -> 00, 1 -> 01, 0.5 -> 10, element i at bits 2(i mod 4).
  EXPECT_EQ(packed[0], 0x00 | (1 << 2) | (2 << 4) | (1 << 6));
  EXPECT_EQ(packed[1], 0x02 | (0 << 2) | (1 << 4));
  std::vector<float> back(encoded.size());
  ASSERT_TRUE(UnpackOneBit(packed, back).ok());
  EXPECT_EQ(back, encoded);

  std::vector<uint8_t> wrong_size(1);
  EXPECT_EQ(PackOneBit(encoded, wrong_size), Status::InvalidArgument());
  EXPECT_EQ(UnpackOneBit(wrong_size, back), Status::InvalidArgument());
  std::vector<float> not_a_bit = {0.0f, 0.7f};
  std::vector<uint8_t> one(1);
  EXPECT_EQ(PackOneBit(not_a_bit, one), Status::InvalidArgument());
  std::vector<uint8_t> code3 = {0x03, 0x00};
  EXPECT_EQ(UnpackOneBit(code3, back), Status::InvalidArgument());
  std::vector<uint8_t> padding = {packed[0], static_cast<uint8_t>(packed[1] | 0x40)};
  EXPECT_EQ(UnpackOneBit(padding, back), Status::InvalidArgument());
}

TEST(OneBitEncoderTest, NoPublicFunctionAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(3).ok());
  float x[16], out[16], rec[16];
  uint32_t owner[16];
  uint8_t packed[4];
  for (int i = 0; i < 16; ++i) x[i] = kA + (kB - kA) * float(i) / 15.0f;
  NODEFL_EXPECT_NO_HEAP({
    auto p = MakeOneBitParams(PrivacyMode::kPaper, 1.0, 3, 16, kA, kB);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(OneBitEpsilon(*p).ok());
    (void)OneBitProbabilityOfOne(0.5, 1.0);
    ASSERT_TRUE(AssignDimensionsToReceivers(rng, 3, owner).ok());
    ASSERT_TRUE(EncodeOneBit(rng, *p, x, out).ok());
    ASSERT_TRUE(EncodeOneBitPartial(rng, *p, x, owner, 1, out).ok());
    ASSERT_TRUE(RecoverOneBit(*p, out, rec).ok());
    ASSERT_TRUE(PackOneBit(out, packed).ok());
    ASSERT_TRUE(UnpackOneBit(packed, rec).ok());
    EXPECT_EQ(EncodeOneBit(rng, *p, Span<const float>(x, 3), out), Status::InvalidArgument());
  });
}

}  // namespace
}  // namespace nodefl
