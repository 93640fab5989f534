// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Wall-clock figure for the server's HCT step at n = 3000 (or
// $NODEFL_HCT_TIMING_N), for information only: disabled by default, run
// with --gtest_also_run_disabled_tests --gtest_filter='HctTiming*'.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hct_test_support.h"
#include "nodefl/server/fedwalk/hct/codebook.h"

namespace nodefl::server::fedwalk {
namespace {

TEST(HctTimingTest, DISABLED_ClusterAndCodebook) {
  const char* env = std::getenv("NODEFL_HCT_TIMING_N");
  const uint32_t kN = env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 3000;
  Drbg rng;
  test::Seed(rng, 3000);
  const CondensedMatrix d = test::RandomMatrix(rng, kN, 0, 0.02);
  CondensedMatrix copy = d;
  std::vector<uint32_t> leaf_vertex(kN);
  for (uint32_t i = 0; i < kN; ++i) leaf_vertex[i] = i;

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const std::vector<Merge> merges = ClusterNnChain(std::move(copy)).value();
  const auto t1 = Clock::now();
  const HctTree tree = HctTree::FromMerges(merges, leaf_vertex).value();
  const auto t2 = Clock::now();
  const Codebook cb = Codebook::Build(d, tree, kN, {.epsilon = 2.0, .k = 32, .threads = 2}).value();
  const auto t3 = Clock::now();
  const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("n=%u: ClusterNnChain %.1f ms, HctTree %.1f ms, Codebook::Build (2 threads) %.1f ms, "
              "max truncated mass %.3g\n",
              kN, ms(t0, t1), ms(t1, t2), ms(t2, t3), cb.max_truncated_mass());
  EXPECT_EQ(cb.vertex_count(), kN);
}

}  // namespace
}  // namespace nodefl::server::fedwalk
