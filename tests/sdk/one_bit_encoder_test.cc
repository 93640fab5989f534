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
  p.released_dims = dims;  // every dim released, as in paper mode
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

  EXPECT_EQ(paper->released_dims, 12u);

  // Strict: the union of all receivers is held to eps, spent on m =
  // max(1, floor(eps / 2.5)) released dims. At eps = 2, m = 1: the one
  // released element goes to one receiver at the whole eps.
  auto strict = MakeOneBitParams(PrivacyMode::kStrict, 2.0, 4, 12, kA, kB);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->released_dims, 1u);
  EXPECT_DOUBLE_EQ(strict->epsilon_per_element, 2.0);
  auto strict_cost = OneBitEpsilon(*strict);
  ASSERT_TRUE(strict_cost.ok());
  EXPECT_DOUBLE_EQ(strict_cost->per_receiver, 2.0);
  EXPECT_DOUBLE_EQ(strict_cost->all_receivers, 2.0);
  // eps = 10: m = 4 at 2.5 each; one receiver sees at most ceil(12/4) = 3.
  auto strict10 = MakeOneBitParams(PrivacyMode::kStrict, 10.0, 4, 12, kA, kB);
  ASSERT_TRUE(strict10.ok());
  EXPECT_EQ(strict10->released_dims, 4u);
  EXPECT_DOUBLE_EQ(strict10->epsilon_per_element, 2.5);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*strict10)->per_receiver, 7.5);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*strict10)->all_receivers, 10.0);
  // m is floor(eps / 2.5), at least 1 and at most d.
  const struct {
    double eps;
    uint32_t dims, m;
  } kReleased[] = {{0.1, 12, 1}, {2.49, 12, 1}, {2.5, 12, 1}, {4.99, 12, 1}, {5.0, 12, 2},
                   {7.6, 12, 3},  {40.0, 12, 12}, {40.0, 3, 3},  {1.0, 1, 1}};
  for (const auto& c : kReleased) {
    auto p = MakeOneBitParams(PrivacyMode::kStrict, c.eps, 2, c.dims, kA, kB);
    ASSERT_TRUE(p.ok()) << c.eps;
    EXPECT_EQ(p->released_dims, c.m) << c.eps << " " << c.dims;
    EXPECT_DOUBLE_EQ(p->epsilon_per_element, c.eps / c.m) << c.eps;
    EXPECT_DOUBLE_EQ(OneBitEpsilon(*p)->all_receivers, c.eps) << c.eps;
  }

  // wl does not divide d: some receiver gets ceil(10/4) = 3 elements, so the
  // paper's per-receiver claim of eps is exceeded; the cost says so.
  auto uneven = MakeOneBitParams(PrivacyMode::kPaper, 2.0, 4, 10, kA, kB);
  ASSERT_TRUE(uneven.ok());
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*uneven)->per_receiver, 3 * 0.8);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*uneven)->all_receivers, 8.0);

  // More receivers than dims: each receiver gets at most one element.
  auto sparse = MakeOneBitParams(PrivacyMode::kPaper, 3.0, 5, 3, kA, kB);
  ASSERT_TRUE(sparse.ok());
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*sparse)->per_receiver, 5.0);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*sparse)->all_receivers, 15.0);

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
  invalid = Params(1.0, 2, 4);
  invalid.released_dims = 0;
  EXPECT_EQ(OneBitEpsilon(invalid).status(), bad);
  invalid.released_dims = 5;
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
  // Paper mode: all 3 dims released, to 3 different receivers of the 5.
  auto p = MakeOneBitParams(PrivacyMode::kPaper, 1.0, 5, 3, kA, kB);
  ASSERT_TRUE(p.ok());
  std::vector<uint32_t> owner(3);
  ASSERT_TRUE(AssignReleasedDimensions(rng, *p, owner).ok());
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
  // Strict mode at eps = 1: one dim released, so one receiver of five gets
  // a bit.
  auto strict = MakeOneBitParams(PrivacyMode::kStrict, 1.0, 5, 3, kA, kB);
  ASSERT_TRUE(strict.ok());
  ASSERT_TRUE(AssignReleasedDimensions(rng, *strict, owner).ok());
  sent = 0;
  int receivers = 0;
  for (uint32_t k = 0; k < 5; ++k) {
    ASSERT_TRUE(EncodeOneBitPartial(rng, *strict, x, owner, k, out).ok());
    int here = 0;
    for (float v : out) here += (v != 0.5f);
    sent += here;
    receivers += here > 0;
  }
  EXPECT_EQ(sent, 1);
  EXPECT_EQ(receivers, 1);
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

// ---- strict mode: m sampled dims at eps/m each ----------------------------------

// The exact law of one recovered dim in strict mode: the midpoint with
// probability 1 - m/d, mid +- (d/m) H with probability (m/d) p and
// (m/d)(1 - p), H = (b - a)/2 (e+1)/(e-1). Its 2nd and 4th central moments
// (the recovery is unbiased, so they are taken about x).
struct RecoveredMoments {
  double variance = 0.0;
  double fourth = 0.0;
};

RecoveredMoments StrictMoments(double x, double eps_element, uint32_t released, uint32_t dims) {
  const double q = double(released) / dims;
  const double p = ProbOne(x, kA, kB, eps_element);
  const double mid = (double(kA) + kB) / 2;
  const double h = RecoveryScale(kA, kB, eps_element) / 2 / q;
  const double atoms[3][2] = {{mid, 1 - q}, {mid + h, q * p}, {mid - h, q * (1 - p)}};
  RecoveredMoments m;
  for (const auto& a : atoms) {
    const double dev2 = (a[0] - x) * (a[0] - x);
    m.variance += a[1] * dev2;
    m.fourth += a[1] * dev2 * dev2;
  }
  return m;
}

// Which dims one encoding released, over `trials` encodings made by
// `release(std::vector<bool>&)`: the chi-square of the per-dim release
// counts (each dim's count is Binomial(T, m/d); the counts sum to T m, so
// Sum (O - E)^2 (d - 1) / (T q (1 - q) d) is chi-square with d - 1 degrees
// of freedom), and how many encodings did not release exactly m dims.
struct ReleaseStats {
  double chi_square = 0.0;
  int wrong_count = 0;
};

template <typename Release>
ReleaseStats MeasureReleases(Release release, uint32_t dims, uint32_t m, int trials) {
  std::vector<double> count(dims, 0.0);
  std::vector<bool> released(dims);
  ReleaseStats s;
  for (int t = 0; t < trials; ++t) {
    release(released);
    uint32_t n = 0;
    for (uint32_t i = 0; i < dims; ++i) {
      count[i] += released[i];
      n += released[i];
    }
    s.wrong_count += (n != m);
  }
  const double q = double(m) / dims;
  const double expected = trials * q;
  for (double c : count) s.chi_square += (c - expected) * (c - expected);
  s.chi_square *= double(dims - 1) / (trials * q * (1 - q) * dims);
  return s;
}

TEST(OneBitEncoderTest, StrictReleasesExactlyMUniformlyChosenDims) {
  constexpr uint32_t kDims = 20;
  constexpr int kTrials = 20000;  // 4,000 expected releases per dim
  auto p = MakeOneBitParams(PrivacyMode::kStrict, 10.0, 1, kDims, kA, kB);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->released_dims, 4u);
  const double critical = testing::ChiSquareCritical(kDims - 1);
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(41).ok());
  std::vector<float> x(kDims, 1.0f), out(kDims);
  const ReleaseStats ok = MeasureReleases(
      [&](std::vector<bool>& released) {
        ASSERT_TRUE(EncodeOneBit(rng, *p, x, out).ok());
        for (uint32_t i = 0; i < kDims; ++i) {
          ASSERT_TRUE(out[i] == 0.0f || out[i] == 0.5f || out[i] == 1.0f);
          released[i] = out[i] != 0.5f;
        }
      },
      kDims, 4, kTrials);
  EXPECT_EQ(ok.wrong_count, 0);
  EXPECT_LT(ok.chi_square, critical);

  // Bug 1: always the first m dims.
  const ReleaseStats first = MeasureReleases(
      [&](std::vector<bool>& released) {
        for (uint32_t i = 0; i < kDims; ++i) released[i] = i < 4;
      },
      kDims, 4, kTrials);
  EXPECT_GT(first.chi_square, critical);
  // Bug 2: each dim independently with probability m/d (the right rate, but
  // the count, and so the budget spent, varies).
  const ReleaseStats independent = MeasureReleases(
      [&](std::vector<bool>& released) {
        for (uint32_t i = 0; i < kDims; ++i) released[i] = rng.BernoulliRational(4, kDims);
      },
      kDims, 4, kTrials);
  EXPECT_GT(independent.wrong_count, 0);
}

// Per-dim mean and variance of strict recoveries of a fixed feature, as
// z-scores against the exact law (StrictMoments), maximised over the dims.
struct StrictFit {
  double max_mean_z = 0.0;
  double max_variance_z = 0.0;
};

// `encode` fills encoded bits for x; `rescale` maps a recovered value (bug
// simulations); the law is that of `law` params.
template <typename Encode, typename Rescale>
StrictFit FitStrict(Encode encode, Rescale rescale, const OneBitParams& law, const std::vector<float>& x,
                    int trials) {
  const uint32_t d = law.dims;
  std::vector<float> bits(d), rec(d);
  std::vector<double> sum(d, 0.0), sum_sq(d, 0.0);
  for (int t = 0; t < trials; ++t) {
    encode(bits);
    EXPECT_TRUE(RecoverOneBit(law, bits, rec).ok());
    for (uint32_t i = 0; i < d; ++i) {
      const double dev = rescale(double{rec[i]}) - x[i];
      sum[i] += dev;
      sum_sq[i] += dev * dev;
    }
  }
  StrictFit fit;
  for (uint32_t i = 0; i < d; ++i) {
    const RecoveredMoments m = StrictMoments(x[i], law.epsilon_per_element, law.released_dims, d);
    const double mean_z = std::fabs(sum[i] / trials) / std::sqrt(m.variance / trials);
    const double var_z = std::fabs(sum_sq[i] / trials - m.variance) /
                         std::sqrt((m.fourth - m.variance * m.variance) / trials);
    fit.max_mean_z = std::fmax(fit.max_mean_z, mean_z);
    fit.max_variance_z = std::fmax(fit.max_variance_z, var_z);
  }
  return fit;
}

TEST(OneBitEncoderTest, StrictRecoveryIsUnbiasedWithTheExactVariance) {
  constexpr uint32_t kDims = 16;
  constexpr int kTrials = 100000;
  std::vector<float> x(kDims);
  for (uint32_t i = 0; i < kDims; ++i) x[i] = kA + (kB - kA) * float(i) / float(kDims - 1);
  // Bonferroni over 2 budgets x 16 dims x 2 statistics.
  const double z = testing::ZBound(testing::kAlpha / (2 * kDims * 2));
  const auto identity = [](double v) { return v; };
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(43).ok());
  for (double eps : {1.0, 10.0}) {  // m = 1 and m = 4
    auto p = MakeOneBitParams(PrivacyMode::kStrict, eps, 1, kDims, kA, kB);
    ASSERT_TRUE(p.ok());
    const auto encode = [&](std::vector<float>& bits) { ASSERT_TRUE(EncodeOneBit(rng, *p, x, bits).ok()); };
    const StrictFit fit = FitStrict(encode, identity, *p, x, kTrials);
    EXPECT_LT(fit.max_mean_z, z) << eps;
    EXPECT_LT(fit.max_variance_z, z) << eps;

    // Bug 1: recovery without the d/m factor (biased towards the midpoint).
    const double mid = (double(kA) + kB) / 2;
    const double q = double(p->released_dims) / kDims;
    const StrictFit unscaled = FitStrict(encode, [&](double v) { return mid + (v - mid) * q; }, *p, x, kTrials);
    EXPECT_GT(unscaled.max_mean_z, z) << eps;
    // Bug 2: the former strict mode, eps/d on every dim: its recoveries are
    // unbiased too, but their variance is far from the sampled encoder's.
    OneBitParams spread = Params(eps / kDims, 1, kDims);
    const StrictFit former = FitStrict(
        [&](std::vector<float>& bits) { ASSERT_TRUE(EncodeOneBit(rng, spread, x, bits).ok()); },
        [&](double v) { return mid + (v - mid) * RecoveryScale(kA, kB, eps / kDims) /
                                         RecoveryScale(kA, kB, p->epsilon_per_element) * q; },
        *p, x, kTrials);
    EXPECT_GT(former.max_variance_z, z) << eps;
  }
}

// log P(E | x = b) / P(E | x = a) for E = "every released bit is 1" and for
// "every released bit is 0" (with a and b swapped), over `reps` encodings of
// the all-a and all-b features. Both are m eps' exactly for the sampled
// encoder: the worst case of the whole output, i.e. of all receivers pooled.
LogRatios MeasureUnionLogRatios(Drbg& rng, const OneBitParams& p, int reps) {
  std::vector<float> xa(p.dims, kA), xb(p.dims, kB), bits(p.dims);
  const auto all = [&](float value) {
    for (float v : bits) {
      if (v != 0.5f && v != value) return false;
    }
    return true;
  };
  double ones_a = 0, ones_b = 0, zeros_a = 0, zeros_b = 0;
  for (int r = 0; r < reps; ++r) {
    EXPECT_TRUE(EncodeOneBit(rng, p, xa, bits).ok());
    ones_a += all(1.0f);
    zeros_a += all(0.0f);
    EXPECT_TRUE(EncodeOneBit(rng, p, xb, bits).ok());
    ones_b += all(1.0f);
    zeros_b += all(0.0f);
  }
  return {std::log(ones_b / ones_a), std::log(zeros_a / zeros_b)};
}

TEST(OneBitEncoderTest, StrictUnionOfReceiversIsBoundedByEpsilonAndTight) {
  // d = 3, eps = 5: m = 2 dims at 2.5 each. Every receiver together sees at
  // most the full encoding, whose worst-case likelihood ratio is e^eps.
  constexpr int kReps = 200000;
  const double eps = 5.0;
  auto p = MakeOneBitParams(PrivacyMode::kStrict, eps, 3, 3, kA, kB);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->released_dims, 2u);
  const double pa = std::pow(ProbOne(kA, kA, kB, 2.5), 2), pb = std::pow(ProbOne(kB, kA, kB, 2.5), 2);
  EXPECT_NEAR(std::log(pb / pa), eps, 1e-12);
  // Delta method, Bonferroni over the two events.
  const double z = testing::ZBound(testing::kAlpha / 2);
  const double tol = z * std::sqrt((1 - pb) / (kReps * pb) + (1 - pa) / (kReps * pa));
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(47).ok());
  const LogRatios r = MeasureUnionLogRatios(rng, *p, kReps);
  EXPECT_LE(r.one, eps + tol);
  EXPECT_LE(r.zero, eps + tol);
  EXPECT_GE(r.one, eps - tol);
  EXPECT_GE(r.zero, eps - tol);

  // Bug: all d dims released at eps/m (sampling forgotten): 3 x 2.5 = 7.5.
  OneBitParams unsampled = *p;
  unsampled.released_dims = 3;
  const LogRatios bug = MeasureUnionLogRatios(rng, unsampled, kReps);
  EXPECT_GT(bug.one, eps + tol);
  EXPECT_GT(bug.zero, eps + tol);
}

TEST(OneBitEncoderTest, StrictPartialEncodingReleasesMDimsToAllReceiversTogether) {
  constexpr uint32_t kDims = 37;
  constexpr uint32_t kWorkload = 5;
  constexpr int kTrials = 20000;
  auto p = MakeOneBitParams(PrivacyMode::kStrict, 10.0, kWorkload, kDims, kA, kB);
  ASSERT_TRUE(p.ok());
  const uint32_t m = p->released_dims;
  ASSERT_EQ(m, 4u);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*p)->all_receivers, 10.0);
  EXPECT_DOUBLE_EQ(OneBitEpsilon(*p)->per_receiver, 10.0);  // min(m, ceil(37/5) = 8) = 4 elements
  const float mid = static_cast<float>((double(kA) + kB) / 2);
  std::vector<float> x(kDims);
  for (uint32_t i = 0; i < kDims; ++i) x[i] = kA + (kB - kA) * float(i) / float(kDims - 1);

  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(53).ok());
  std::vector<uint32_t> owner(kDims);
  std::vector<float> enc(kDims), rec(kDims), pooled(kDims);
  std::vector<double> sum(kDims, 0.0), sum_unscaled(kDims, 0.0);
  std::vector<double> owner_of_dim0(kWorkload, 0.0);
  const ReleaseStats releases = MeasureReleases(
      [&](std::vector<bool>& released) {
        ASSERT_TRUE(AssignReleasedDimensions(rng, *p, owner).ok());
        std::fill(pooled.begin(), pooled.end(), mid);
        int bits = 0;
        for (uint32_t k = 0; k < kWorkload; ++k) {
          ASSERT_TRUE(EncodeOneBitPartial(rng, *p, x, owner, k, enc).ok());
          ASSERT_TRUE(RecoverOneBit(*p, enc, rec).ok());
          for (uint32_t i = 0; i < kDims; ++i) {
            if (owner[i] == k) {
              ASSERT_TRUE(enc[i] == 0.0f || enc[i] == 1.0f);
              pooled[i] = rec[i];
              ++bits;
            } else {
              ASSERT_EQ(enc[i], 0.5f);  // not this receiver's, or not released at all
            }
          }
        }
        ASSERT_EQ(bits, int(m));  // all receivers together: m elements at eps/m
        for (uint32_t i = 0; i < kDims; ++i) {
          released[i] = owner[i] != kDimNotReleased;
          sum[i] += pooled[i];
          sum_unscaled[i] += mid + (pooled[i] - mid) * double(m) / kDims;
        }
        if (owner[0] != kDimNotReleased) owner_of_dim0[owner[0]] += 1;
      },
      kDims, m, kTrials);
  EXPECT_EQ(releases.wrong_count, 0);
  EXPECT_LT(releases.chi_square, testing::ChiSquareCritical(kDims - 1));
  // The sample is independent of the partition: a released dim 0 went to
  // each receiver with probability 1/wl.
  double released0 = 0;
  for (double c : owner_of_dim0) released0 += c;
  const std::vector<double> expected(kWorkload, released0 / kWorkload);
  EXPECT_LT(testing::ChiSquareStatistic(owner_of_dim0, expected), testing::ChiSquareCritical(kWorkload - 1));

  // What all receivers recover together is unbiased for every dim; without
  // the d/m factor it is not (Bonferroni over the dims).
  const double z = testing::ZBound(testing::kAlpha / kDims);
  double worst_unscaled = 0.0;
  for (uint32_t i = 0; i < kDims; ++i) {
    const double sd = std::sqrt(StrictMoments(x[i], p->epsilon_per_element, m, kDims).variance / kTrials);
    EXPECT_NEAR(sum[i] / kTrials, x[i], z * sd) << "dim " << i;
    worst_unscaled = std::fmax(worst_unscaled, std::fabs(sum_unscaled[i] / kTrials - x[i]) / sd);
  }
  EXPECT_GT(worst_unscaled, z);

  // A full partition (every dim assigned) would release d > m dims: refused,
  // as is one with fewer than m released dims.
  ASSERT_TRUE(AssignDimensionsToReceivers(rng, kWorkload, owner).ok());
  EXPECT_EQ(EncodeOneBitPartial(rng, *p, x, owner, 0, enc), Status::InvalidArgument());
  ASSERT_TRUE(AssignReleasedDimensions(rng, *p, owner).ok());
  for (uint32_t& k : owner) {
    if (k != kDimNotReleased) {
      k = kDimNotReleased;
      break;
    }
  }
  EXPECT_EQ(EncodeOneBitPartial(rng, *p, x, owner, 0, enc), Status::InvalidArgument());
  std::vector<uint32_t> short_owner(kDims - 1);
  EXPECT_EQ(AssignReleasedDimensions(rng, *p, short_owner), Status::InvalidArgument());
}

TEST(OneBitEncoderTest, PaperModeReleasesEveryDimAndDrawsNoSample) {
  // Paper mode is unchanged: every dim becomes a bit, the assignment is the
  // plain partition, and the same seed gives the same stream as before
  // (selection sampling with m = d takes every dim without drawing).
  auto p = MakeOneBitParams(PrivacyMode::kPaper, 2.0, 3, 10, kA, kB);
  ASSERT_TRUE(p.ok());
  Drbg a, b;
  ASSERT_TRUE(a.SeedDeterministic(59).ok());
  ASSERT_TRUE(b.SeedDeterministic(59).ok());
  std::vector<uint32_t> released(10), partition(10);
  ASSERT_TRUE(AssignReleasedDimensions(a, *p, released).ok());
  ASSERT_TRUE(AssignDimensionsToReceivers(b, 3, partition).ok());
  EXPECT_EQ(released, partition);
  std::vector<float> x(10, 1.0f), out(10);
  ASSERT_TRUE(EncodeOneBit(a, *p, x, out).ok());
  for (float v : out) EXPECT_TRUE(v == 0.0f || v == 1.0f);
  // Ten Bernoulli bits, one 64-bit draw each, and nothing else.
  for (int i = 0; i < 10; ++i) (void)b.NextU64();
  EXPECT_EQ(a.NextU64(), b.NextU64());
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
    auto strict = MakeOneBitParams(PrivacyMode::kStrict, 6.0, 3, 16, kA, kB);
    ASSERT_TRUE(strict.ok());
    ASSERT_TRUE(EncodeOneBit(rng, *strict, x, out).ok());
    ASSERT_TRUE(AssignReleasedDimensions(rng, *strict, owner).ok());
    ASSERT_TRUE(EncodeOneBitPartial(rng, *strict, x, owner, 2, out).ok());
    ASSERT_TRUE(RecoverOneBit(*p, out, rec).ok());
    ASSERT_TRUE(PackOneBit(out, packed).ok());
    ASSERT_TRUE(UnpackOneBit(packed, rec).ok());
    EXPECT_EQ(EncodeOneBit(rng, *p, Span<const float>(x, 3), out), Status::InvalidArgument());
  });
}

}  // namespace
}  // namespace nodefl
