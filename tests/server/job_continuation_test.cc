// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What continuing a job after a server restart rests on (the JobRunner's
// journal, docs/reliability.md "Server restarts"): a job's salts and seeds
// come from the entropy tape the runner sets, so a job made again with the
// journaled bytes answers as the first one did; and FedWalk's walk job can
// be made from the HCT job's hand-off bytes alone. The kill -9 tests
// (server_restart_tls_*) run the whole path.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/fedwalk_walk_handoff.h"
#include "nodefl/server/jobs/handed_off_stage.h"
#include "nodefl/server/jobs/job_entropy.h"
#include "nodefl/server/jobs/job_factory.h"

namespace nodefl::server::jobs {
namespace {

// Hands out fixed bytes and counts them.
class FixedTape final : public EntropyTape {
 public:
  explicit FixedTape(uint8_t fill) : fill_(fill) {}
  void Fill(std::span<uint8_t> out) override {
    for (uint8_t& b : out) b = fill_++;
    drawn += out.size();
  }
  size_t drawn = 0;

 private:
  uint8_t fill_;
};

TEST(JobEntropyTest, ATapeOnTheThreadSuppliesTheBytesAndItsScopeRestoresTheOuterOne) {
  FixedTape outer(10), inner(100);
  uint8_t a[4], b[4], c[4];
  {
    ScopedEntropyTape scope(&outer);
    FillJobEntropy(a);
    {
      ScopedEntropyTape nested(&inner);
      FillJobEntropy(b);
    }
    FillJobEntropy(c);
  }
  EXPECT_EQ(std::vector<uint8_t>(a, a + 4), (std::vector<uint8_t>{10, 11, 12, 13}));
  EXPECT_EQ(std::vector<uint8_t>(b, b + 4), (std::vector<uint8_t>{100, 101, 102, 103}));
  EXPECT_EQ(std::vector<uint8_t>(c, c + 4), (std::vector<uint8_t>{14, 15, 16, 17}));
  EXPECT_EQ(outer.drawn, 8u);
  EXPECT_EQ(inner.drawn, 4u);
}

TEST(JobEntropyTest, WithoutATapeTheBytesComeFromTheOperatingSystem) {
  FixedTape unused(0);
  { ScopedEntropyTape scope(&unused); }
  uint8_t a[32], b[32];
  FillJobEntropy(a);
  FillJobEntropy(b);
  EXPECT_NE(std::memcmp(a, b, sizeof a), 0);  // equal with probability 2^-256
  EXPECT_EQ(unused.drawn, 0u);
}

// The job's first round under a tape: what a replay must reproduce.
std::vector<RoundStart> BeginSecureCompare(EntropyTape* tape) {
  ServerConfig config;
  config.job = "secure-compare";
  ScopedEntropyTape scope(tape);
  std::unique_ptr<Job> job = MakeJob(config, "secure-compare", 7, {0, 1, 2, 3}, nullptr);
  EXPECT_NE(job, nullptr);
  EXPECT_TRUE(job->continuable());
  return job ? job->Begin(1000) : std::vector<RoundStart>();
}

TEST(JobEntropyTest, ASecureCompareJobMadeAgainWithTheSameBytesStartsAsTheFirstDid) {
  FixedTape first(1), again(1), other(2);
  const std::vector<RoundStart> a = BeginSecureCompare(&first);
  const std::vector<RoundStart> b = BeginSecureCompare(&again);
  const std::vector<RoundStart> c = BeginSecureCompare(&other);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_GT(first.drawn, 0u);  // its salt comes from the tape
  EXPECT_EQ(a[0].parameters, b[0].parameters);
  EXPECT_NE(a[0].parameters, c[0].parameters);  // the salt is in the parameters
  EXPECT_EQ(a[0].devices, b[0].devices);
}

TEST(WalkHandOffTest, RoundTripsEveryField) {
  WalkHandOff h;
  h.mode = PrivacyMode::kPaper;
  h.vertex_count = 10312;
  h.epsilon_per_encoding = 0.125;
  h.score_sensitivity = 3.5;
  h.scaled_encoder = true;
  h.devices = {0, 5, 4294967294u};
  WalkHandOff back;
  ASSERT_TRUE(DecodeWalkHandOff(EncodeWalkHandOff(h), &back));
  EXPECT_EQ(back.mode, h.mode);
  EXPECT_EQ(back.vertex_count, h.vertex_count);
  EXPECT_EQ(back.epsilon_per_encoding, h.epsilon_per_encoding);
  EXPECT_EQ(back.score_sensitivity, h.score_sensitivity);
  EXPECT_EQ(back.scaled_encoder, h.scaled_encoder);
  EXPECT_EQ(back.devices, h.devices);
}

TEST(WalkHandOffTest, BytesThatAreNotOneAreRefused) {
  WalkHandOff h;
  h.devices = {1, 2};
  const std::vector<uint8_t> good = EncodeWalkHandOff(h);
  WalkHandOff out;
  ASSERT_TRUE(DecodeWalkHandOff(good, &out));
  EXPECT_FALSE(DecodeWalkHandOff({}, &out));
  std::vector<uint8_t> bad = good;
  bad.pop_back();  // a device id cut short
  EXPECT_FALSE(DecodeWalkHandOff(bad, &out));
  bad = good;
  bad.insert(bad.end(), {0, 0, 0, 0});  // one id more than counted
  EXPECT_FALSE(DecodeWalkHandOff(bad, &out));
  bad = good;
  bad[0] = 2;  // another version
  EXPECT_FALSE(DecodeWalkHandOff(bad, &out));
  bad = good;
  bad[1] = 7;  // no such privacy mode
  EXPECT_FALSE(DecodeWalkHandOff(bad, &out));
}

TEST(WalkHandOffTest, TheWalkStageIsMadeFromAHandOffAlone) {
  ServerConfig config;
  config.job = "fedwalk";
  WalkHandOff h;
  h.mode = PrivacyMode::kPaper;
  h.vertex_count = 6;
  h.epsilon_per_encoding = 1.0;
  h.score_sensitivity = 1.0;
  h.devices = {0, 2, 3, 5};
  HandedOffStage previous(EncodeWalkHandOff(h));
  FixedTape tape(1);
  ScopedEntropyTape scope(&tape);
  std::unique_ptr<Job> walks = MakeJob(config, "fedwalk-walks", 2, {}, &previous);
  ASSERT_NE(walks, nullptr);
  EXPECT_TRUE(walks->continuable());
  const std::vector<RoundStart> starts = walks->Begin(0);
  ASSERT_FALSE(starts.empty());
  EXPECT_EQ(starts[0].devices, h.devices);  // the walkers are the hand-off's devices
  // Without a previous stage, or with bytes that are not a hand-off, none.
  EXPECT_EQ(MakeJob(config, "fedwalk-walks", 2, {}, nullptr), nullptr);
  HandedOffStage broken(std::vector<uint8_t>{1, 2, 3});
  EXPECT_EQ(MakeJob(config, "fedwalk-walks", 2, {}, &broken), nullptr);
}

}  // namespace
}  // namespace nodefl::server::jobs
