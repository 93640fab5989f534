// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/random/drbg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "heap_counter.h"
#include "nodefl/platform/host_platform.h"
#include "stat_util.h"

namespace nodefl {
namespace {

TEST(DrbgTest, UnseededDrawsFail) {
  Drbg rng;
  uint8_t out[8];
  EXPECT_EQ(rng.Fill(out), Status::FailedPrecondition());
  EXPECT_FALSE(rng.seeded());
}

TEST(DrbgTest, DeterministicIsReproducibleAndStreamsDiffer) {
  Drbg a, b, c;
  ASSERT_TRUE(a.SeedDeterministic(42, 0).ok());
  ASSERT_TRUE(b.SeedDeterministic(42, 0).ok());
  ASSERT_TRUE(c.SeedDeterministic(42, 1).ok());
  EXPECT_TRUE(a.deterministic());
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    differ += (x != c.NextU64());
  }
  EXPECT_EQ(differ, 1000);
}

TEST(DrbgTest, KnownAnswerPinsTheDeterministicStream) {
  // Reproducible experiments depend on this stream never changing silently
  // across releases or platforms (this test also runs on aarch64 under qemu).
  // The values were recorded from this implementation on x86-64.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(1, 0).ok());
  EXPECT_EQ(rng.NextU64(), 0xf8ab6f891131ca75ull);
  EXPECT_EQ(rng.NextU64(), 0x000c08f68aeddb81ull);
}

TEST(DrbgTest, EntropySeedingUsesTheHookAndFailsWithoutIt) {
  struct Counting {
    int calls = 0;
  } counter;
  EntropySource source;
  source.context = &counter;
  source.fill = [](void* ctx, Span<uint8_t> out) -> Status {
    static_cast<Counting*>(ctx)->calls++;
    return host::HostEntropyFill(nullptr, out);
  };
  Drbg rng;
  const uint8_t personal[] = {'d', 'e', 'v', '7'};
  ASSERT_TRUE(rng.SeedFromEntropy(source, personal).ok());
  EXPECT_GT(counter.calls, 0);
  EXPECT_FALSE(rng.deterministic());

  EntropySource broken;
  broken.fill = [](void*, Span<uint8_t>) -> Status { return Status::Unavailable(); };
  Drbg failing;
  EXPECT_EQ(failing.SeedFromEntropy(broken, {}), Status::Unavailable());
  EXPECT_EQ(failing.NextU64(), 0u);  // sticky failure yields zeros, never stale state
  EXPECT_FALSE(failing.status().ok());

  EntropySource missing;
  Drbg no_hook;
  EXPECT_EQ(no_hook.SeedFromEntropy(missing, {}), Status::FailedPrecondition());
}

TEST(DrbgTest, TwoEntropySeededGeneratorsDiffer) {
  Platform platform = host::MakeHostPlatform();
  Drbg a, b;
  ASSERT_TRUE(a.SeedFromEntropy(platform.entropy, {}).ok());
  ASSERT_TRUE(b.SeedFromEntropy(platform.entropy, {}).ok());
  EXPECT_NE(a.NextU64(), b.NextU64());
}

TEST(DrbgTest, UniformBelowIsUniform) {
  // Chi-square goodness of fit over 37 cells (a bound that is not a power of
  // two, so modulo bias would show).
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(7).ok());
  constexpr int kCells = 37;
  constexpr int kDraws = 37 * 4000;
  std::vector<double> observed(kCells, 0.0), expected(kCells, kDraws / double(kCells));
  for (int i = 0; i < kDraws; ++i) observed[rng.UniformBelow(kCells)] += 1;
  EXPECT_LT(testing::ChiSquareStatistic(observed, expected), testing::ChiSquareCritical(kCells - 1));
  EXPECT_EQ(rng.UniformBelow(1), 0u);
}

TEST(DrbgTest, DoublesStayInRangeAndHaveUniformMoments) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(9).ok());
  constexpr int kDraws = 200000;
  double sum = 0.0;
  double min_open = 1.0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.UniformDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const double v = rng.UniformOpenDouble();
    ASSERT_GT(v, 0.0);
    ASSERT_LT(v, 1.0);
    min_open = std::fmin(min_open, v);
    sum += u;
  }
  // Mean of U(0,1) has sd sqrt(1/12/n).
  const double sd = std::sqrt(1.0 / 12.0 / kDraws);
  EXPECT_NEAR(sum / kDraws, 0.5, testing::ZBound() * sd);
  EXPECT_TRUE(std::isfinite(std::log(min_open)));
}

TEST(DrbgTest, OpenDoubleExtremesLieStrictlyInsideTheUnitInterval) {
  // The two extreme draws, computed exactly: 2^-53 and 1 - 2^-53.
  EXPECT_EQ(Drbg::OpenUnitFromBits(0), 0x1.0p-53);
  EXPECT_EQ(Drbg::OpenUnitFromBits(UINT64_MAX), 1.0 - 0x1.0p-53);
  EXPECT_LT(Drbg::OpenUnitFromBits(UINT64_MAX), 1.0);
  EXPECT_EQ(Drbg::OpenUnitFromBits(0) + Drbg::OpenUnitFromBits(UINT64_MAX), 1.0);  // symmetric
  // Only the top 52 bits count; the next value up is (1 + 1/2) 2^-52.
  EXPECT_EQ(Drbg::OpenUnitFromBits(0xFFF), Drbg::OpenUnitFromBits(0));
  EXPECT_EQ(Drbg::OpenUnitFromBits(uint64_t{1} << 12), 3 * 0x1.0p-53);
  EXPECT_TRUE(std::isfinite(std::log(Drbg::OpenUnitFromBits(0))));
  EXPECT_TRUE(std::isfinite(std::log1p(-Drbg::OpenUnitFromBits(UINT64_MAX))));
  // The former map, (k + 1/2) 2^-53 with 53 bits, fails the check above:
  // k + 1/2 = 2^53 - 1/2 needs 54 significant bits and rounds up to 2^53.
  const auto former = [](uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; };
  EXPECT_EQ(former(UINT64_MAX), 1.0);

  // UniformOpenDouble is that map applied to one NextU64 draw.
  Drbg a, b;
  ASSERT_TRUE(a.SeedDeterministic(13).ok());
  ASSERT_TRUE(b.SeedDeterministic(13).ok());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.UniformOpenDouble(), Drbg::OpenUnitFromBits(b.NextU64()));
}

TEST(DrbgTest, BernoulliFrequencies) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(11).ok());
  constexpr int kDraws = 100000;
  int hits = 0, rational_hits = 0;
  for (int i = 0; i < kDraws; ++i) {
    hits += rng.Bernoulli(0.3);
    rational_hits += rng.BernoulliRational(2, 7);
  }
  const double z = testing::ZBound();
  EXPECT_NEAR(hits / double(kDraws), 0.3, z * std::sqrt(0.3 * 0.7 / kDraws));
  EXPECT_NEAR(rational_hits / double(kDraws), 2.0 / 7, z * std::sqrt(2.0 / 7 * 5.0 / 7 / kDraws));
  EXPECT_FALSE(rng.Bernoulli(0.0));
  EXPECT_TRUE(rng.Bernoulli(1.0));
  EXPECT_FALSE(rng.Bernoulli(std::nan("")));
}

TEST(DrbgTest, DrawingNeverAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(3).ok());
  uint8_t buf[3000];
  NODEFL_EXPECT_NO_HEAP({
    Drbg local;
    local.SeedDeterministic(5).IgnoreError();
    for (int i = 0; i < 2000; ++i) (void)local.NextU64();
    rng.Fill(buf).IgnoreError();
    (void)rng.UniformBelow(1000003);
  });
  Platform platform = host::MakeHostPlatform();
  NODEFL_EXPECT_NO_HEAP({
    Drbg seeded;
    seeded.SeedFromEntropy(platform.entropy, {}).IgnoreError();
    (void)seeded.NextU32();
  });
}

}  // namespace
}  // namespace nodefl
