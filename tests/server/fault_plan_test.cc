// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The emulator's fault plan (server/emulator/include/nodefl/emulator/
// fault_plan.h): what --faults accepts and refuses, which devices it picks,
// and the rates of its wire draws.
#include "nodefl/emulator/fault_plan.h"

#include <gtest/gtest.h>

#include <cmath>

namespace nodefl::emulator {
namespace {

using std::chrono::milliseconds;

FaultPlan Parsed(const char* spec) {
  FaultPlan plan;
  const auto why = ParseFaultPlan(spec, &plan);
  EXPECT_FALSE(why.has_value()) << spec << ": " << why.value_or("");
  return plan;
}

std::string Refusal(const char* spec) {
  FaultPlan plan;
  plan.seed = 77;
  const auto why = ParseFaultPlan(spec, &plan);
  EXPECT_TRUE(why.has_value()) << spec << " was accepted";
  EXPECT_EQ(plan.seed, 77u) << "a refused spec must leave the plan as it was";
  return why.value_or("");
}

TEST(FaultPlanTest, ParsesEveryItem) {
  const FaultPlan p = Parsed("kill=0.1@walks+250ms,revive=2s,slow=0.05:20ms,drop=0.001,corrupt=0.002,cut=0.003,seed=9");
  EXPECT_DOUBLE_EQ(p.kill_fraction, 0.1);
  EXPECT_EQ(p.kill_phase, FaultPhase::kWalks);
  EXPECT_EQ(p.kill_delay, milliseconds(250));
  ASSERT_TRUE(p.revive_after.has_value());
  EXPECT_EQ(*p.revive_after, milliseconds(2000));
  EXPECT_DOUBLE_EQ(p.slow_fraction, 0.05);
  EXPECT_EQ(p.slow_delay, milliseconds(20));
  EXPECT_DOUBLE_EQ(p.drop_probability, 0.001);
  EXPECT_DOUBLE_EQ(p.corrupt_probability, 0.002);
  EXPECT_DOUBLE_EQ(p.cut_probability, 0.003);
  EXPECT_EQ(p.seed, 9u);
  EXPECT_TRUE(p.any());
  EXPECT_TRUE(p.wire_faults());
}

TEST(FaultPlanTest, KillByTimeAndEveryPhaseName) {
  const FaultPlan t = Parsed("kill=0.5@3s");
  EXPECT_EQ(t.kill_phase, FaultPhase::kNone);
  EXPECT_EQ(t.kill_delay, milliseconds(3000));
  EXPECT_FALSE(t.revive_after.has_value());
  for (const FaultPhaseName& name : kFaultPhases) {
    const std::string spec = std::string("kill=1@") + name.name;
    FaultPlan p;
    ASSERT_FALSE(ParseFaultPlan(spec, &p).has_value()) << spec;
    EXPECT_EQ(p.kill_phase, name.phase);
    EXPECT_STREQ(FaultPhaseText(p.kill_phase), name.name);
  }
}

TEST(FaultPlanTest, RefusesWhatItCannotMean) {
  EXPECT_NE(Refusal("").find("empty"), std::string::npos);
  EXPECT_NE(Refusal("kill=0.1").find("kill=F@PHASE"), std::string::npos);
  EXPECT_NE(Refusal("kill=1.5@walks").find("kill=F@PHASE"), std::string::npos);
  EXPECT_NE(Refusal("kill=-0.1@walks").find("kill=F@PHASE"), std::string::npos);
  EXPECT_NE(Refusal("kill=0.1@lunch").find("walks"), std::string::npos);
  EXPECT_NE(Refusal("kill=0.1@walks+2").find("delay"), std::string::npos);
  EXPECT_NE(Refusal("kill=0.1@walks,").find("comma"), std::string::npos);
  EXPECT_NE(Refusal("revive=1s").find("kill="), std::string::npos);
  EXPECT_NE(Refusal("slow=0.1").find("slow=F:DELAY"), std::string::npos);
  EXPECT_NE(Refusal("slow=0.1:fast").find("slow=F:DELAY"), std::string::npos);
  EXPECT_NE(Refusal("drop=2").find("probability"), std::string::npos);
  EXPECT_NE(Refusal("drop=0.6,cut=0.6").find("exceed 1"), std::string::npos);
  EXPECT_NE(Refusal("seed=x").find("whole number"), std::string::npos);
  EXPECT_NE(Refusal("melt=1").find("unknown key"), std::string::npos);
  EXPECT_NE(Refusal("kill").find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(Refusal("revive=90000s,kill=0.1@1s").find("revive=DELAY"), std::string::npos);
}

TEST(FaultPlanTest, DescribesItself) {
  EXPECT_EQ(FaultPlan{}.Describe(), "none");
  const std::string d = Parsed("kill=0.1@compare+100ms,revive=1s,cut=0.01,seed=4").Describe();
  EXPECT_NE(d.find("kill 0.1 of the devices at phase compare + 100ms, revived after 1000ms"), std::string::npos) << d;
  EXPECT_NE(d.find("cut 0.01"), std::string::npos) << d;
  EXPECT_NE(d.find("seed 4"), std::string::npos) << d;
}

TEST(FaultPlanTest, PicksExactCountsDisjointAndBySeed) {
  const FaultPlan p = Parsed("kill=0.1@walks,slow=0.2:5ms,seed=3");
  const auto a = AssignFaults(p, 34);
  ASSERT_EQ(a.size(), 34u);
  uint32_t killed = 0, slowed = 0;
  for (const DeviceFaults& d : a) {
    killed += d.kill;
    slowed += d.slow;
    EXPECT_FALSE(d.kill && d.slow);
  }
  EXPECT_EQ(killed, 3u);  // round(3.4)
  EXPECT_EQ(slowed, 7u);  // round(6.8)
  // The same seed picks the same devices; another seed picks others.
  const auto again = AssignFaults(p, 34);
  FaultPlan other = p;
  other.seed = 4;
  const auto different = AssignFaults(other, 34);
  bool same = true, differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    same = same && a[i].kill == again[i].kill && a[i].slow == again[i].slow && a[i].wire_seed == again[i].wire_seed;
    differs = differs || a[i].kill != different[i].kill;
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differs);
  // Everything, and nothing.
  const auto all = AssignFaults(Parsed("kill=1@1s"), 10);
  for (const DeviceFaults& d : all) EXPECT_TRUE(d.kill);
  for (const DeviceFaults& d : AssignFaults(FaultPlan{}, 10)) EXPECT_FALSE(d.kill || d.slow);
}

// Each device's kill choice is uniform over the devices: over many seeds,
// every device is killed about kill_fraction of the time.
TEST(FaultPlanTest, KillChoiceIsUniformOverDevices) {
  constexpr uint32_t kDevices = 20, kSeeds = 4000;
  std::vector<uint32_t> hits(kDevices);
  for (uint32_t s = 1; s <= kSeeds; ++s) {
    FaultPlan p = Parsed("kill=0.25@1s");
    p.seed = s;
    const auto a = AssignFaults(p, kDevices);
    for (uint32_t i = 0; i < kDevices; ++i) hits[i] += a[i].kill;
  }
  // Each count is Binomial(4000, 0.25) (mean 1000, sd 27.4): 5 sd.
  for (uint32_t i = 0; i < kDevices; ++i) EXPECT_NEAR(hits[i], 1000.0, 137.0) << "device " << i;
}

TEST(FaultPlanTest, WireDrawsHitTheirRates) {
  const FaultPlan p = Parsed("drop=0.01,corrupt=0.02,cut=0.03,seed=5");
  WireDice dice(AssignFaults(p, 1)[0].wire_seed);
  constexpr int kDraws = 200000;
  int drop = 0, corrupt = 0, cut = 0;
  for (int i = 0; i < kDraws; ++i) {
    switch (DrawWireFault(p, dice)) {
      case WireFault::kDrop: ++drop; break;
      case WireFault::kCorrupt: ++corrupt; break;
      case WireFault::kCut: ++cut; break;
      case WireFault::kNone: break;
    }
  }
  // Binomial counts, 5 sd: sqrt(200000 p (1 - p)).
  const auto tolerance = [](double q) { return 5 * std::sqrt(kDraws * q * (1 - q)); };
  EXPECT_NEAR(drop, kDraws * 0.01, tolerance(0.01));
  EXPECT_NEAR(corrupt, kDraws * 0.02, tolerance(0.02));
  EXPECT_NEAR(cut, kDraws * 0.03, tolerance(0.03));
  // A plan without wire faults never draws one.
  WireDice quiet(1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(DrawWireFault(FaultPlan{}, quiet), WireFault::kNone);
}

}  // namespace
}  // namespace nodefl::emulator
