// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk walk coordinator without a network: every walk slot ends as
// completed, dead end or lost with a reason; lost walks are re-issued while
// attempts remain; the in-flight window holds; SkipGram runs at the end.
#include "nodefl/server/jobs/fedwalk_walk_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/common/walk_messages.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::jobs {
namespace {

namespace fw = nodefl::fedwalk;

nodefl_wire_JobReport Report(double epsilon = 0, uint32_t releases = 0) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS;
  r.epsilon = epsilon;
  r.releases = releases;
  return r;
}

struct Issued {
  uint32_t device;
  uint32_t walk_id;
  uint16_t length;
};

std::vector<Issued> Starts(const std::vector<DeviceData>& data) {
  std::vector<Issued> out;
  for (const DeviceData& d : data) {
    EXPECT_EQ(d.kind, static_cast<uint32_t>(fw::WalkRecord::kStartWalks));
    const uint32_t count = LoadU32Le(d.bytes.data());
    EXPECT_EQ(d.bytes.size(), 4 + count * fw::kStartWalkEntryBytes);
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* e = d.bytes.data() + 4 + i * fw::kStartWalkEntryBytes;
      out.push_back({d.device, LoadU32Le(e), LoadU16Le(e + 4)});
    }
  }
  return out;
}

std::vector<uint8_t> ResultRecord(uint32_t walk_id, fw::WalkOutcome outcome, uint16_t hops,
                            const std::vector<uint32_t>& ids) {
  std::vector<uint8_t> b(12 + 4 * ids.size());
  StoreU32Le(walk_id, b.data());
  b[4] = static_cast<uint8_t>(outcome);
  StoreU16Le(hops, b.data() + 6);
  StoreU16Le(static_cast<uint16_t>(ids.size()), b.data() + 8);
  for (size_t i = 0; i < ids.size(); ++i) StoreU32Le(ids[i], b.data() + 12 + 4 * i);
  return b;
}

constexpr uint32_t kResult = static_cast<uint32_t>(fw::WalkRecord::kWalkResult);

// Job compute runs on this executor: a test decides when it runs, so no
// test waits on a thread or sleeps.
ManualExecutor& Compute() {
  static ManualExecutor executor;
  return executor;
}

FedWalkWalkOptions Options() {
  FedWalkWalkOptions o;
  o.executor = &Compute();
  o.params.length = 4;
  o.params.p = 0;
  o.params.epsilon_per_encoding = 0.5;
  o.vertex_count = 10;
  o.walks_per_vertex = 3;
  o.max_in_flight = 5;
  o.walk_timeout_ms = 1000;
  o.max_attempts = 2;
  o.round_deadline_ms = 1000;
  o.dim = 8;
  o.window = 2;
  o.threads = 1;
  o.seed = 7;
  return o;
}

// Runs SkipGram training, then polls: the job finishes.
void WaitFinished(FedWalkWalkJob& job, uint64_t now_us) {
  Compute().RunAll();
  job.Poll(now_us);
}

TEST(FedWalkWalkJobTest, ExpectedMessagesFollowTheRecurrence) {
  EXPECT_EQ(fedwalk::ExpectedMessagesPerWalk(1, 0.2), 0.0);
  EXPECT_EQ(fedwalk::ExpectedMessagesPerWalk(2, 0.2), 1.0);
  EXPECT_NEAR(fedwalk::ExpectedMessagesPerWalk(3, 0.2), 2 - 0.2, 1e-12);
  EXPECT_NEAR(fedwalk::ExpectedMessagesPerWalk(40, 0.0), 39.0, 1e-12);
  // The recurrence of the paper's App. A.2 (E_1 = 0, E_2 = 1) solves to
  // E_l = 1 + (l-2)/(1+p) - p^2 (1 - (-p)^(l-2)) / (1+p)^2: 32.64 at the
  // paper's defaults. The paper's printed Eq. 21 gives 32.31: it does not
  // satisfy E_2 = 1 and runs 2p/(1+p) below its own recurrence
  // (docs/fedwalk.md, "Theorem 4.2").
  for (const double p : {0.0, 0.1, 0.2, 0.4, 1.0}) {
    for (const double l : {2.0, 3.0, 10.0, 40.0}) {
      const double exact = 1 + (l - 2) / (1 + p) - p * p * (1 - std::pow(-p, l - 2)) / ((1 + p) * (1 + p));
      EXPECT_NEAR(fedwalk::ExpectedMessagesPerWalk(static_cast<uint32_t>(l), p), exact, 1e-9) << "l " << l << " p " << p;
    }
  }
  const double p = 0.2, l = 40;
  const double eq21 = (l - 2) / (1 + p) + (2 - 2 * p - 1 / (1 + p)) * (1 - std::pow(-p, l - 2)) / (1 + p);
  EXPECT_NEAR(eq21, 32.31, 0.01);
  EXPECT_NEAR(fedwalk::ExpectedMessagesPerWalk(40, 0.2) - eq21, 2 * p / (1 + p), 1e-9);
}

TEST(FedWalkWalkJobTest, EveryWalkIsAccountedForAndTheWindowHolds) {
  FedWalkWalkJob job(Options(), {0, 1, 2, 3});
  auto r1 = job.Begin(0);
  ASSERT_EQ(r1.size(), 1u);
  Result<fw::WalkParameters> params = fw::DecodeWalkParameters(ConstByteSpan(r1[0].parameters));
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->length, 4u);
  for (uint32_t d = 0; d < 3; ++d) EXPECT_TRUE(job.OnReport(d, 1, Report(), 10).empty());
  auto r2 = job.OnReport(3, 1, Report(), 10);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].round, fw::kWalkRoundWalks);
  EXPECT_EQ(job.summary().walk_slots, 12u);  // gamma 3 x 4 devices

  std::vector<Issued> issued = Starts(job.TakeData());
  EXPECT_EQ(issued.size(), 5u);  // the in-flight window
  std::set<uint32_t> ids;
  for (const Issued& i : issued) {
    EXPECT_EQ(i.length, 4u);
    EXPECT_TRUE(ids.insert(i.walk_id).second);
  }
  uint64_t now = 20;
  // Complete everything as it is issued: one walk is dropped once (then
  // re-issued and completed), one ends early.
  bool dropped_once = false, dead_end_once = false;
  while (!issued.empty()) {
    std::vector<Issued> next;
    for (const Issued& i : issued) {
      std::vector<RoundStart> r;
      if (!dropped_once) {
        dropped_once = true;
        r = job.OnUpload(i.device, 2, kResult, ResultRecord(i.walk_id, fw::WalkOutcome::kDropped, 1, {1}), now);
      } else if (!dead_end_once) {
        dead_end_once = true;
        r = job.OnUpload(i.device, 2, kResult, ResultRecord(i.walk_id, fw::WalkOutcome::kDeadEnd, 1, {2, 5}), now);
      } else {
        r = job.OnUpload(i.device, 2, kResult, ResultRecord(i.walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), now);
      }
      for (const Issued& n : Starts(job.TakeData())) next.push_back(n);
      if (!r.empty()) {
        EXPECT_EQ(r[0].round, fw::kWalkRoundReport);
      }
    }
    issued = next;
    now += 10;
  }
  const WalkSummary& s = job.summary();
  EXPECT_EQ(s.completed, 11u);
  EXPECT_EQ(s.dead_ends, 1u);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.reissued, 1u);
  EXPECT_EQ(s.lost_dropped, 1u);
  EXPECT_EQ(s.issued, 13u);
  EXPECT_EQ(s.tokens, 11u * 4 + 2);
  EXPECT_EQ(job.corpus().num_walks(), 12u);
  // A second result for a finished walk is late, not counted twice.
  job.OnUpload(0, 2, kResult, ResultRecord(1, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), now);
  EXPECT_EQ(job.summary().late_results, 1u);
  EXPECT_EQ(job.summary().completed, 11u);

  for (uint32_t d = 0; d < 4; ++d) job.OnReport(d, 3, Report(1.5, 3), now);
  WaitFinished(job, now);
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.summary().error.empty()) << job.summary().error;
  EXPECT_TRUE(job.succeeded());
  EXPECT_DOUBLE_EQ(job.summary().hops_mean, 3.0);
  EXPECT_EQ(job.summary().encodings, 12u);
  EXPECT_DOUBLE_EQ(job.summary().epsilon_max, 1.5);
}

TEST(FedWalkWalkJobTest, TimeoutsAndOfflineDevicesLoseWalksWithAReason) {
  FedWalkWalkOptions o = Options();
  o.walks_per_vertex = 1;
  o.max_in_flight = 100;
  FedWalkWalkJob job(o, {0, 1, 2});
  (void)job.Begin(0);
  for (uint32_t d = 0; d < 3; ++d) job.OnReport(d, 1, Report(), 1);
  // What the runner does with the job's records: device 2 is offline, so
  // every record for it comes back as undeliverable.
  auto deliver = [&job](uint64_t now) {
    std::vector<Issued> delivered;
    for (const Issued& i : Starts(job.TakeData())) {
      if (i.device == 2) {
        job.OnUndeliverable(2, now);
      } else {
        delivered.push_back(i);
      }
    }
    return delivered;
  };
  std::vector<Issued> issued = deliver(2);
  ASSERT_EQ(issued.size(), 2u);  // devices 0 and 1
  EXPECT_EQ(job.summary().lost_offline, 1u);
  // Device 0's walk completes; device 1's never comes back.
  for (const Issued& i : issued) {
    if (i.device == 0) {
      job.OnUpload(0, 2, kResult, ResultRecord(i.walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), 3);
    }
  }
  // Device 2's second attempt (issued with that result) fails the same way:
  // its slot is lost for good.
  EXPECT_TRUE(deliver(3).empty());
  EXPECT_EQ(job.summary().lost_offline, 2u);
  EXPECT_EQ(job.summary().lost, 1u);
  // Device 1's walk times out and is issued again, then times out again.
  job.Poll(2'000'000);
  std::vector<Issued> again = deliver(2'000'000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].device, 1u);
  EXPECT_EQ(job.summary().lost_deadline, 1u);
  job.Poll(4'000'000);
  const WalkSummary& s = job.summary();
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(s.lost, 2u);  // both slots out of attempts
  EXPECT_EQ(s.lost_offline, 2u);
  EXPECT_EQ(s.lost_deadline, 2u);
  EXPECT_EQ(s.reissued, 2u);
  EXPECT_EQ(s.completed + s.dead_ends + s.lost, s.walk_slots);
}

// A walk a device lost without a word (every relayed message delivered, no
// result) is given up once it is `stall_factor` times older than the recent
// walks' 99th-percentile latency, not at walk_timeout_ms: the job's tail
// does not idle for half an hour. 100 walks, 99 back after `latency`, one
// never: it is lost as stalled between 8 x latency and 8 x latency + one
// poll, re-issued, and its late result is not used.
void ExpectStallAfter(uint64_t latency_us) {
  FedWalkWalkOptions o = Options();
  o.vertex_count = 10;
  o.walks_per_vertex = 10;
  o.max_in_flight = 100;
  o.walk_timeout_ms = 1'800'000;
  o.stall_factor = 8;
  o.stall_floor_ms = 1000;
  FedWalkWalkJob job(o, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  (void)job.Begin(0);
  for (uint32_t d = 0; d < 10; ++d) job.OnReport(d, 1, Report(), 0);
  const std::vector<Issued> issued = Starts(job.TakeData());
  ASSERT_EQ(issued.size(), 100u);
  for (size_t i = 1; i < issued.size(); ++i) {
    job.OnUpload(issued[i].device, 2, kResult,
                 ResultRecord(issued[i].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), latency_us);
  }
  const uint64_t window_us = std::max<uint64_t>(8 * latency_us, 1'000'000);
  job.Poll(window_us);  // exactly the window: not yet
  EXPECT_EQ(job.summary().lost_stalled, 0u);
  EXPECT_TRUE(job.TakeData().empty());
  job.Poll(window_us + 1);
  const WalkSummary& s = job.summary();
  EXPECT_EQ(s.lost_stalled, 1u);
  EXPECT_EQ(s.lost_deadline, 0u);
  EXPECT_EQ(s.reissued, 1u);
  EXPECT_DOUBLE_EQ(s.stall_window_s, static_cast<double>(window_us) / 1e6);
  const std::vector<Issued> again = Starts(job.TakeData());
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].device, issued[0].device);
  // The first attempt's result, late: counted, not used.
  job.OnUpload(issued[0].device, 2, kResult, ResultRecord(issued[0].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}),
               window_us + 2);
  EXPECT_EQ(job.summary().late_results, 1u);
  EXPECT_EQ(job.summary().completed, 99u);
  job.OnUpload(again[0].device, 2, kResult, ResultRecord(again[0].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}),
               window_us + 3);
  EXPECT_EQ(job.summary().completed, 100u);
  EXPECT_EQ(job.summary().lost, 0u);
}

TEST(FedWalkWalkJobTest, AWalkWithoutAResultIsLostAfterTheRecentLatenciesNotTheTimeout) {
  ExpectStallAfter(50'000);     // 8 x 50 ms is under the 1 s floor: the floor
  ExpectStallAfter(5'000'000);  // a slow fleet: 40 s, and nothing is cut before
}

TEST(FedWalkWalkJobTest, WithTooFewCompletedWalksOnlyTheTimeoutApplies) {
  FedWalkWalkOptions o = Options();
  o.walks_per_vertex = 1;
  o.max_in_flight = 100;
  o.walk_timeout_ms = 60'000;
  o.stall_floor_ms = 1000;
  FedWalkWalkJob job(o, {0, 1, 2});
  (void)job.Begin(0);
  for (uint32_t d = 0; d < 3; ++d) job.OnReport(d, 1, Report(), 0);
  const std::vector<Issued> issued = Starts(job.TakeData());
  ASSERT_EQ(issued.size(), 3u);
  job.OnUpload(issued[0].device, 2, kResult,
               ResultRecord(issued[0].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), 1000);
  job.Poll(59'000'000);
  EXPECT_EQ(job.summary().lost_stalled + job.summary().lost_deadline, 0u);
  job.Poll(60'000'001);
  EXPECT_EQ(job.summary().lost_stalled, 0u);
  EXPECT_EQ(job.summary().lost_deadline, 2u);
}

TEST(RecentLatenciesTest, TheStallWindowIsAFactorOfTheRecent99thPercentileWithinFloorAndCap) {
  RecentLatencies r(100, 10);
  for (uint64_t v = 1; v <= 9; ++v) r.Add(v);
  EXPECT_EQ(r.StallAfterUs(8, 0, 1'000'000), 0u);  // fewer than 10 samples
  for (uint64_t v = 10; v <= 100; ++v) r.Add(v);
  EXPECT_EQ(r.P99Us(), 99u);
  EXPECT_EQ(r.StallAfterUs(8, 0, 1'000'000), 792u);
  EXPECT_EQ(r.StallAfterUs(8, 1000, 1'000'000), 1000u);  // the floor
  EXPECT_EQ(r.StallAfterUs(8, 0, 500), 500u);            // the cap
  EXPECT_EQ(r.StallAfterUs(0, 0, 1'000'000), 0u);        // off
  // Only the last 100 count: 100 more of 10,000 replace them all (the
  // percentile is refreshed every window / 8 additions).
  for (int i = 0; i < 100; ++i) r.Add(10'000);
  EXPECT_EQ(r.P99Us(), 10'000u);
}

std::vector<uint8_t> DroppedStarts(const std::vector<Issued>& issued) {
  std::vector<uint8_t> record(4 + 4 * issued.size());
  StoreU32Le(static_cast<uint32_t>(issued.size()), record.data());
  for (size_t i = 0; i < issued.size(); ++i) StoreU32Le(issued[i].walk_id, record.data() + 4 + 4 * i);
  return record;
}

TEST(FedWalkWalkJobTest, RefusedStartsAreOfferedAgainLaterWithoutCountingAsAttempts) {
  FedWalkWalkOptions o = Options();
  o.walks_per_vertex = 2;
  o.max_attempts = 1;  // a refusal must not use up the only attempt
  o.start_retry_ms = 100;
  FedWalkWalkJob job(o, {0});
  (void)job.Begin(0);
  job.OnReport(0, 1, Report(), 1);
  std::vector<Issued> issued = Starts(job.TakeData());
  ASSERT_EQ(issued.size(), 2u);
  // The device had room for neither: nothing was encoded, nothing lost.
  job.OnUpload(0, 2, static_cast<uint32_t>(fw::WalkRecord::kDroppedStarts), DroppedStarts(issued), 1000);
  EXPECT_EQ(job.summary().start_refusals, 2u);
  EXPECT_EQ(job.summary().lost_dropped, 0u);
  EXPECT_EQ(job.summary().reissued, 0u);
  EXPECT_TRUE(Starts(job.TakeData()).empty());  // not at once: the queue needs time to drain
  job.Poll(1000 + 99'000);
  EXPECT_TRUE(Starts(job.TakeData()).empty());
  job.Poll(1000 + 100'000);
  issued = Starts(job.TakeData());
  ASSERT_EQ(issued.size(), 2u);
  for (const Issued& i : issued) {
    job.OnUpload(0, 2, kResult, ResultRecord(i.walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), 200'000);
  }
  EXPECT_EQ(job.summary().completed, 2u);
  EXPECT_EQ(job.summary().issued, 4u);
  EXPECT_EQ(job.summary().lost, 0u);
}

TEST(FedWalkWalkJobTest, ASlotRefusedTooOftenIsLost) {
  FedWalkWalkOptions o = Options();
  o.walks_per_vertex = 1;
  o.start_retry_ms = 1;
  o.max_start_refusals = 3;
  FedWalkWalkJob job(o, {0});
  (void)job.Begin(0);
  job.OnReport(0, 1, Report(), 1);
  uint64_t now = 10;
  for (int refusal = 0; refusal < 4; ++refusal) {
    const std::vector<Issued> issued = Starts(job.TakeData());
    ASSERT_EQ(issued.size(), 1u) << refusal;
    job.OnUpload(0, 2, static_cast<uint32_t>(fw::WalkRecord::kDroppedStarts), DroppedStarts(issued), now);
    now += 1000;
    job.Poll(now);
  }
  EXPECT_TRUE(Starts(job.TakeData()).empty());
  EXPECT_EQ(job.summary().start_refusals, 4u);
  EXPECT_EQ(job.summary().lost, 1u);
  EXPECT_EQ(job.summary().lost_dropped, 1u);  // the cause, as for any lost slot
}

TEST(FedWalkWalkJobTest, MalformedResultsAreCountedNotTrusted) {
  FedWalkWalkJob job(Options(), {0, 1});
  (void)job.Begin(0);
  job.OnReport(0, 1, Report(), 1);
  job.OnReport(1, 1, Report(), 1);
  std::vector<Issued> issued = Starts(job.TakeData());
  ASSERT_FALSE(issued.empty());
  // A vertex id out of range, a wrong count, an unknown walk id.
  job.OnUpload(0, 2, kResult, ResultRecord(issued[0].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 99}), 2);
  std::vector<uint8_t> short_one = ResultRecord(issued[1].walk_id, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4});
  short_one.pop_back();
  job.OnUpload(0, 2, kResult, short_one, 2);
  job.OnUpload(0, 2, kResult, ResultRecord(999999, fw::WalkOutcome::kComplete, 3, {1, 2, 3, 4}), 2);
  EXPECT_EQ(job.summary().bad_results, 3u);
  EXPECT_EQ(job.summary().completed, 0u);
  EXPECT_EQ(job.corpus().num_tokens(), 0u);
}

}  // namespace
}  // namespace nodefl::server::jobs
