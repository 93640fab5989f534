// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/neighbour_echo_job.h"

#include <gtest/gtest.h>

namespace nodefl::server::jobs {
namespace {

nodefl_wire_JobReport Report(uint32_t expected, uint32_t sent = 0, uint32_t received = 0,
                             uint32_t duplicates = 0, uint32_t rejected = 0, uint32_t code = 0) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
  r.code = code;
  r.expected = expected;
  r.sent = sent;
  r.received = received;
  r.duplicates = duplicates;
  r.rejected = rejected;
  return r;
}

// A path 0-1-2: degrees 1, 2, 1; 2|E| = 4.
TEST(NeighbourEchoJobTest, CleanRunIsVerified) {
  NeighbourEchoJob job({7, 1000, 1000}, {2, 0, 1, 1});  // duplicates in the list are ignored
  auto start = job.Begin(0);
  EXPECT_EQ(start.round, 1u);
  EXPECT_EQ(start.devices, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(job.OnReport(0, 1, Report(1), 10).devices.empty());
  EXPECT_TRUE(job.OnReport(1, 1, Report(2), 20).devices.empty());
  auto round2 = job.OnReport(2, 1, Report(1), 30);
  EXPECT_EQ(round2.round, 2u);
  EXPECT_EQ(round2.devices.size(), 3u);
  job.OnReport(0, 2, Report(1, 1, 1), 40);
  job.OnReport(1, 2, Report(2, 2, 2), 50);
  EXPECT_FALSE(job.finished());
  job.OnReport(2, 2, Report(1, 1, 1), 60);
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.summary().verified());
  EXPECT_EQ(job.summary().expected, 4u);
  EXPECT_EQ(job.summary().received, 4u);
  EXPECT_EQ(job.protocol_errors(), 0u);
}

TEST(NeighbourEchoJobTest, DuplicatesOrShortfallAreNotVerified) {
  NeighbourEchoJob job({7, 1000, 1000}, {0, 1});
  job.Begin(0);
  job.OnReport(0, 1, Report(1), 1);
  job.OnReport(1, 1, Report(1), 2);
  job.OnReport(0, 2, Report(1, 1, 1, /*duplicates=*/1), 3);
  job.OnReport(1, 2, Report(1, 1, 0), 4);
  ASSERT_TRUE(job.finished());
  EXPECT_FALSE(job.summary().verified());
  EXPECT_EQ(job.summary().unclean, (std::vector<uint32_t>{0, 1}));
}

TEST(NeighbourEchoJobTest, DeadlinesRecordMissingDevicesAndProceed) {
  NeighbourEchoJob job({7, 1000, 2000}, {0, 1, 2});
  job.Begin(0);
  job.OnReport(0, 1, Report(1), 1);
  job.OnReport(1, 1, Report(1), 2);
  EXPECT_TRUE(job.Poll(999'000).devices.empty());  // before the deadline
  auto round2 = job.Poll(1'000'000);
  EXPECT_EQ(round2.round, 2u);
  EXPECT_EQ(round2.devices, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(job.summary().missed_round1, (std::vector<uint32_t>{2}));
  job.OnReport(0, 2, Report(1, 1, 1), 1'100'000);
  job.Poll(3'000'000);
  ASSERT_TRUE(job.finished());
  EXPECT_EQ(job.summary().missed_round2, (std::vector<uint32_t>{1}));
  EXPECT_FALSE(job.summary().verified());
  // A late report is a protocol error, not a silent change of the result.
  job.OnReport(2, 2, Report(1, 1, 1), 3'100'000);
  EXPECT_EQ(job.protocol_errors(), 1u);
  EXPECT_EQ(job.summary().reported, 1u);
  // Device 1 was recorded as missing round 2; its late report cannot undo it.
  job.OnReport(1, 2, Report(1, 1, 1), 3'200'000);
  EXPECT_EQ(job.protocol_errors(), 2u);
  EXPECT_EQ(job.summary().reported, 1u);
}

TEST(NeighbourEchoJobTest, StrangersAndWrongRoundsAreProtocolErrors) {
  NeighbourEchoJob job({7, 1000, 1000}, {0, 1});
  job.Begin(0);
  job.OnReport(9, 1, Report(1), 1);  // not a participant
  job.OnReport(0, 2, Report(1), 2);  // round 2 while round 1 runs
  job.OnReport(0, 1, Report(1), 3);
  job.OnReport(0, 1, Report(1), 4);  // repeated after a reconnect: a no-op
  EXPECT_EQ(job.protocol_errors(), 2u);
  EXPECT_EQ(job.repeated_reports(), 1u);
  EXPECT_EQ(job.summary().keys_ready, 1u);
}

TEST(NeighbourEchoJobTest, FailedKeyRoundExcludesDevice) {
  NeighbourEchoJob job({7, 1000, 1000}, {0, 1});
  job.Begin(0);
  job.OnReport(0, 1, Report(1, 0, 0, 0, 0, /*code=*/16), 1);
  auto round2 = job.OnReport(1, 1, Report(1), 2);
  EXPECT_EQ(round2.devices, (std::vector<uint32_t>{1}));
  EXPECT_EQ(job.summary().missed_round1, (std::vector<uint32_t>{0}));
}

// A device the server gives up on (offline past its grace) misses the
// running round at once: round 2 starts, and the job ends, without waiting
// for the deadlines (1000 s here).
TEST(NeighbourEchoJobTest, UnreachableDeviceMissesTheRoundAtOnce) {
  NeighbourEchoJob job({7, 1'000'000, 1'000'000}, {0, 1, 2});
  job.Begin(0);
  job.OnReport(0, 1, Report(1), 1);
  job.OnReport(1, 1, Report(1), 2);
  const auto round2 = job.OnUnreachable(2, 3);
  EXPECT_EQ(round2.round, 2u);
  EXPECT_EQ(round2.devices, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(job.summary().missed_round1, (std::vector<uint32_t>{2}));
  job.OnReport(0, 2, Report(1, 1, 1), 4);
  EXPECT_TRUE(job.OnUnreachable(0, 5).devices.empty());  // reported already: nothing changes
  EXPECT_FALSE(job.finished());
  EXPECT_TRUE(job.OnUnreachable(1, 6).devices.empty());
  EXPECT_TRUE(job.finished());
  EXPECT_EQ(job.summary().missed_round2, (std::vector<uint32_t>{1}));
  EXPECT_EQ(job.summary().reported, 1u);
  EXPECT_TRUE(job.OnUnreachable(9, 7).devices.empty());  // a stranger
}

// The devices given up on are named to the round-2 devices still running:
// round-1 misses when round 2 starts, round-2 misses as they happen; a
// device that reported, or is itself gone, is not told; each miss is told
// once.
TEST(NeighbourEchoJobTest, PeersGoneAreToldToTheDevicesStillRunning) {
  NeighbourEchoJob job({7, 1'000'000, 1'000'000}, {0, 1, 2, 3, 4});
  job.Begin(0);
  EXPECT_TRUE(job.TakePeersGone().gone.empty());  // round 1: nothing to tell
  job.OnReport(0, 1, Report(1), 1);
  job.OnReport(1, 1, Report(3), 2);
  job.OnReport(2, 1, Report(2), 3);
  job.OnReport(3, 1, Report(1, 0, 0, 0, 0, /*code=*/16), 4);  // its keys failed
  EXPECT_TRUE(job.TakePeersGone().gone.empty());
  const auto round2 = job.OnUnreachable(4, 5);
  ASSERT_EQ(round2.round, 2u);
  EXPECT_EQ(round2.devices, (std::vector<uint32_t>{0, 1, 2}));
  auto told = job.TakePeersGone();
  EXPECT_EQ(told.gone, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(told.recipients, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(job.TakePeersGone().gone.empty());  // told once

  nodefl_wire_JobReport done = Report(1, 1, 0);
  done.abandoned = 1;
  done.code = 14;  // UNAVAILABLE: settled with a message abandoned
  job.OnReport(0, 2, done, 6);
  job.OnUnreachable(2, 7);
  told = job.TakePeersGone();
  EXPECT_EQ(told.gone, (std::vector<uint32_t>{2}));
  EXPECT_EQ(told.recipients, (std::vector<uint32_t>{1}));  // 0 reported, 2 is the one gone
  EXPECT_EQ(job.summary().gone_notices, 4u);

  nodefl_wire_JobReport last = Report(3, 3, 1);
  last.abandoned = 2;
  job.OnReport(1, 2, last, 8);
  ASSERT_TRUE(job.finished());
  EXPECT_EQ(job.summary().abandoned, 3u);
  EXPECT_EQ(job.summary().unclean, (std::vector<uint32_t>{0, 1}));
  EXPECT_FALSE(job.summary().verified());
  EXPECT_TRUE(job.TakePeersGone().gone.empty());
}

// The last device of round 2 going leaves nobody to tell.
TEST(NeighbourEchoJobTest, NoRecipientsNoNotice) {
  NeighbourEchoJob job({7, 1'000'000, 1'000'000}, {0, 1});
  job.Begin(0);
  job.OnReport(0, 1, Report(1), 1);
  job.OnReport(1, 1, Report(1), 2);
  EXPECT_TRUE(job.TakePeersGone().gone.empty());
  job.OnReport(0, 2, Report(1, 1, 1), 3);
  job.OnUnreachable(1, 4);
  EXPECT_TRUE(job.finished());
  const auto told = job.TakePeersGone();
  EXPECT_TRUE(told.gone.empty());
  EXPECT_TRUE(told.recipients.empty());
  EXPECT_EQ(job.summary().gone_notices, 0u);
}

}  // namespace
}  // namespace nodefl::server::jobs
