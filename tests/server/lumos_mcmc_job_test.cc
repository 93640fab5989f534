// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-mcmc job (Lumos Alg. 2/3 over secure comparisons) without
// devices: the test plays the devices' side of the contract
// (protocol/lumos/mcmc_format.h) by hand, answering every session start
// with the comparison of scripted plaintext workloads, and checks the
// steps of one iteration: Alg. 3 on every edge, then on every pair of
// candidates, the move sent to the unique maximum, Alg. 3 again, line 7's
// comparison (party B compares its workload before the move, Lumos
// Eq. 18) and the revert exactly when Eq. 18 said no. Also the plan's
// validation: mcmc only with paper privacy.
#include "nodefl/server/jobs/lumos_mcmc_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/server/jobs/job_options.h"
#include "nodefl/server/jobs/lumos_kind.h"

namespace nodefl::server::jobs {
namespace {

namespace mf = nodefl::lumos;
namespace cmp = nodefl::compare;

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr uint64_t kSecond = 1'000'000;

nodefl_wire_JobReport Report(StatusCode code = StatusCode::kOk) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC;
  r.code = static_cast<uint32_t>(code);
  return r;
}

std::vector<uint8_t> U32s(const std::vector<uint32_t>& ids) {
  std::vector<uint8_t> bytes(4 * ids.size());
  for (size_t i = 0; i < ids.size(); ++i) StoreU32Le(ids[i], bytes.data() + 4 * i);
  return bytes;
}

uint32_t U32(const std::vector<uint8_t>& bytes) { return bytes.size() == 4 ? LoadU32Le(bytes.data()) : 0; }

LumosMcmcOptions McmcOptions(uint32_t iterations, uint64_t seed) {
  LumosMcmcOptions o;
  o.job_id = 5;
  o.iterations = iterations;
  o.seed = seed;
  o.round_deadline_ms = 1000;
  o.step_deadline_ms = 1000;
  o.session_timeout_ms = 500;
  return o;
}

struct SeenStart {
  uint32_t device = 0;
  mf::McmcSessionStart start;
};

// The devices' side, scripted: each device holds its workload now and
// before its latest move; every session start is answered at once by both
// parties with the plaintext comparison.
class Fleet {
 public:
  Fleet(LumosMcmcOptions options, std::vector<uint32_t> participants, Edges edges)
      : job(std::move(options), std::move(participants), std::move(edges)) {}

  void Keep(std::vector<RoundStart> started) {
    for (RoundStart& s : started) rounds.push_back(std::move(s));
  }

  // Answers session starts until none is left; returns the other records
  // (moves, reverts, cancels) in order.
  std::vector<DeviceData> Settle() {
    std::vector<DeviceData> others;
    std::map<uint32_t, std::vector<SeenStart>> open;  // wire session id -> parties seen
    for (;;) {
      std::vector<DeviceData> data = job.TakeData();
      if (data.empty()) break;
      for (DeviceData& d : data) {
        EXPECT_EQ(d.round, 2u);
        if (d.kind != mf::kMcmcSessionStart) {
          others.push_back(std::move(d));
          continue;
        }
        EXPECT_EQ(d.bytes.size() % mf::kMcmcSessionStartBytes, 0u);
        for (size_t at = 0; at + mf::kMcmcSessionStartBytes <= d.bytes.size(); at += mf::kMcmcSessionStartBytes) {
          Result<mf::McmcSessionStart> s =
              mf::DecodeMcmcSessionStart(ConstByteSpan(d.bytes.data() + at, mf::kMcmcSessionStartBytes));
          EXPECT_TRUE(s.ok());
          if (!s.ok()) continue;
          starts.push_back({d.device, *s});
          open[s->start.session].push_back({d.device, *s});
        }
      }
      for (auto it = open.begin(); it != open.end();) {
        if (it->second.size() == 2) {
          Answer(it->first, it->second);
          it = open.erase(it);
        } else {
          ++it;
        }
      }
    }
    EXPECT_TRUE(open.empty()) << "a session started on one party only";
    return others;
  }

  void MoveDone(uint32_t device, uint32_t iteration, bool reverted, uint32_t moved) {
    std::vector<uint8_t> bytes(mf::kMcmcMoveDoneBytes);
    ASSERT_TRUE(mf::EncodeMcmcMoveDone({.iteration = iteration, .reverted = reverted, .moved = moved}, ByteSpan(bytes))
                    .ok());
    Keep(job.OnUpload(device, 2, mf::kMcmcMoveDone, std::move(bytes), now));
  }

  // Round 3 for every device asked: kept list, summary, report.
  void ReportAll(const std::map<uint32_t, std::vector<uint32_t>>& kept, uint32_t greedy_max) {
    ASSERT_FALSE(rounds.empty());
    const RoundStart report = rounds.back();
    ASSERT_EQ(report.round, 3u);
    Result<mf::McmcRoundParameters> p = mf::DecodeMcmcParameters(ConstByteSpan(report.parameters));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->phase, mf::McmcPhase::kReport);
    EXPECT_TRUE(p->upload_kept);
    for (uint32_t id : report.devices) {
      const std::vector<uint32_t> list = kept.count(id) ? kept.at(id) : std::vector<uint32_t>{};
      if (!list.empty()) Keep(job.OnUpload(id, 3, mf::kMcmcKept, U32s(list), now));
      mf::McmcSummary s;
      s.workload = static_cast<uint32_t>(list.size());
      s.greedy_workload = greedy_max;
      s.messages_sent = 2;
      std::vector<uint8_t> bytes(mf::kMcmcSummaryBytes);
      ASSERT_TRUE(mf::EncodeMcmcSummary(s, ByteSpan(bytes)).ok());
      Keep(job.OnUpload(id, 3, mf::kMcmcSummary, std::move(bytes), now));
      Keep(job.OnReport(id, 3, Report(), now));
    }
  }

  // The sessions started between `from` (an index into `starts`) and now,
  // as (party A, party B) pairs.
  std::set<std::pair<uint32_t, uint32_t>> PairsSince(size_t from) const {
    std::set<std::pair<uint32_t, uint32_t>> pairs;
    for (size_t i = from; i < starts.size(); ++i) {
      const SeenStart& s = starts[i];
      if (s.start.start.role == cmp::Role::kA) pairs.insert({s.device, s.start.start.peer});
    }
    return pairs;
  }

  static std::vector<uint8_t> Aborted(uint32_t session) {
    cmp::SessionResult r;
    r.session = session;
    r.done = false;
    r.code = static_cast<uint8_t>(StatusCode::kAborted);
    std::vector<uint8_t> bytes(cmp::kSessionResultHeaderBytes);
    EXPECT_TRUE(cmp::EncodeSessionResult(r, ByteSpan(bytes)).ok());
    return bytes;
  }

  LumosMcmcJob job;
  std::set<std::pair<uint32_t, uint32_t>> abort_once;  // (A, B): A aborts the next such session
  uint64_t now = 10 * kSecond;
  std::map<uint32_t, uint32_t> workload, before;
  std::vector<RoundStart> rounds;
  std::vector<SeenStart> starts;

 private:
  uint32_t Value(uint32_t device, mf::McmcValue value) {
    return value == mf::McmcValue::kWorkload ? workload[device] : before[device];
  }

  void Answer(uint32_t session, const std::vector<SeenStart>& parties) {
    const SeenStart& a = parties[0].start.start.role == cmp::Role::kA ? parties[0] : parties[1];
    const SeenStart& b = parties[0].start.start.role == cmp::Role::kA ? parties[1] : parties[0];
    if (abort_once.erase({a.device, b.device}) > 0) {
      // Party A aborts; B keeps running until the server cancels it.
      Keep(job.OnUpload(a.device, 2, mf::kMcmcSessionResult, Aborted(session), now));
      return;
    }
    EXPECT_EQ(a.start.start.role, cmp::Role::kA);
    EXPECT_EQ(b.start.start.role, cmp::Role::kB);
    EXPECT_EQ(a.start.start.peer, b.device);
    EXPECT_EQ(b.start.start.peer, a.device);
    EXPECT_EQ(a.start.start.count, 1u);
    const uint32_t x = Value(a.device, a.start.value), y = Value(b.device, b.start.value);
    cmp::SessionResult r;
    r.session = session;
    r.done = true;
    r.count = 1;
    r.bytes_sent = 100;
    r.bits[0] = static_cast<uint8_t>((x > y ? 1 : 0) | (x == y ? 2 : 0));
    r.bit_bytes = 1;
    std::vector<uint8_t> bytes(cmp::kSessionResultHeaderBytes + 1);
    EXPECT_TRUE(cmp::EncodeSessionResult(r, ByteSpan(bytes)).ok());
    Keep(job.OnUpload(a.device, 2, mf::kMcmcSessionResult, bytes, now));
    Keep(job.OnUpload(b.device, 2, mf::kMcmcSessionResult, bytes, now));
  }
};

// Round 1: every participant reports (those in `refuse` with
// kFailedPrecondition); round 2 must start for the others.
void RunKeys(Fleet& f, const std::vector<uint32_t>& participants, const std::set<uint32_t>& refuse = {}) {
  f.Keep(f.job.Begin(f.now));
  ASSERT_EQ(f.rounds.size(), 1u);
  EXPECT_EQ(f.rounds[0].round, 1u);
  EXPECT_EQ(f.rounds[0].devices, participants);
  Result<mf::McmcRoundParameters> p = mf::DecodeMcmcParameters(ConstByteSpan(f.rounds[0].parameters));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->phase, mf::McmcPhase::kKeys);
  EXPECT_GE(p->width, 1u);
  EXPECT_TRUE(std::any_of(std::begin(p->salt), std::end(p->salt), [](uint8_t b) { return b != 0; }));
  for (uint32_t id : participants) {
    f.Keep(f.job.OnReport(id, 1, Report(refuse.count(id) ? StatusCode::kFailedPrecondition : StatusCode::kOk), f.now));
  }
  ASSERT_EQ(f.rounds.size(), 2u);
  EXPECT_EQ(f.rounds[1].round, 2u);
  std::vector<uint32_t> active;
  for (uint32_t id : participants) {
    if (!refuse.count(id)) active.push_back(id);
  }
  EXPECT_EQ(f.rounds[1].devices, active);
  Result<mf::McmcRoundParameters> p2 = mf::DecodeMcmcParameters(ConstByteSpan(f.rounds[1].parameters));
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->phase, mf::McmcPhase::kIterate);
  EXPECT_TRUE(std::equal(std::begin(p->salt), std::end(p->salt), std::begin(p2->salt)));
}

// The single record of `kind` among `records`; its device through `device`.
uint32_t OnlyRecord(const std::vector<DeviceData>& records, uint32_t kind, uint32_t* device) {
  EXPECT_EQ(records.size(), 1u);
  if (records.size() != 1) return 0;
  EXPECT_EQ(records[0].kind, kind);
  *device = records[0].device;
  return U32(records[0].bytes);
}

// A triangle 1-2-3 with pendants 0 (on 1) and 4 (on 1; it refuses in
// round 1). Greedy: 1 keeps {0, 2, 3}, 2 keeps {3}.
const Edges kEdges = {{0, 1}, {1, 2}, {1, 3}, {2, 3}, {1, 4}};
const std::vector<uint32_t> kParticipants = {0, 1, 2, 3, 4};

TEST(LumosMcmcJob, OneIterationAcceptsALowerMaximum) {
  Fleet f(McmcOptions(1, 7), kParticipants, kEdges);
  f.workload = {{0, 0}, {1, 3}, {2, 1}, {3, 0}};
  RunKeys(f, kParticipants, {4});
  EXPECT_EQ(f.job.summary().refused, std::vector<uint32_t>({4}));

  // Alg. 3 on every edge between active devices (never the absent 4),
  // party A the lower id, both comparing their workloads now.
  std::vector<DeviceData> records = f.Settle();
  const std::set<std::pair<uint32_t, uint32_t>> edges = {{0, 1}, {1, 2}, {1, 3}, {2, 3}};
  EXPECT_EQ(f.PairsSince(0), edges);
  for (const SeenStart& s : f.starts) EXPECT_EQ(s.start.value, mf::McmcValue::kWorkload);
  // 1 is the only candidate: no pair stage, the move goes to it.
  uint32_t device = 0;
  EXPECT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
  EXPECT_EQ(device, 1u);
  EXPECT_EQ(f.starts.size(), 8u);

  // 1 gives {1, 2} to 2 and {1, 3} to 3: workloads 0, 1, 2, 1.
  f.before[1] = 3;
  f.workload = {{0, 0}, {1, 1}, {2, 2}, {3, 1}};
  const size_t second = f.starts.size();
  f.MoveDone(1, 1, false, 2);
  records = f.Settle();
  // Alg. 3 again (line 6) -> u2 = 2 alone; then line 7: A = 2 (its
  // workload now), B = 1 (its workload before the move).
  ASSERT_GE(f.starts.size(), second + 10);
  const SeenStart& a7 = f.starts[f.starts.size() - 2].start.start.role == cmp::Role::kA
                            ? f.starts[f.starts.size() - 2]
                            : f.starts[f.starts.size() - 1];
  const SeenStart& b7 = f.starts[f.starts.size() - 2].start.start.role == cmp::Role::kB
                            ? f.starts[f.starts.size() - 2]
                            : f.starts[f.starts.size() - 1];
  EXPECT_EQ(a7.device, 2u);
  EXPECT_EQ(a7.start.value, mf::McmcValue::kWorkload);
  EXPECT_EQ(b7.device, 1u);
  EXPECT_EQ(b7.start.value, mf::McmcValue::kBeforeMove);
  EXPECT_TRUE(records.empty());  // accepted: no revert

  ASSERT_EQ(f.job.iterations().size(), 1u);
  const LumosMcmcIteration& it = f.job.iterations()[0];
  EXPECT_EQ(it.iteration, 1u);
  EXPECT_EQ(it.u, 1u);
  EXPECT_EQ(it.moved, 2u);
  EXPECT_EQ(it.u2, 2u);
  EXPECT_TRUE(it.compared);
  EXPECT_EQ(it.delta_class, kDeltaLower);
  EXPECT_TRUE(it.accepted);
  EXPECT_EQ(it.outcome, LumosMcmcOutcome::kAcceptedLower);
  EXPECT_EQ(it.comparisons, 9u);  // 4 edges, 4 edges, line 7

  // One iteration asked: round 3 follows.
  ASSERT_EQ(f.rounds.back().round, 3u);
  EXPECT_EQ(f.rounds.back().devices, std::vector<uint32_t>({0, 1, 2, 3}));
  f.ReportAll({{1, {0}}, {2, {1, 3}}, {3, {1}}}, 3);
  ASSERT_TRUE(f.job.finished());
  EXPECT_TRUE(f.job.succeeded()) << f.job.summary().error;
  const LumosMcmcSummary& s = f.job.summary();
  EXPECT_EQ(s.iterations_run, 1u);
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.rejected + s.skipped, 0u);
  EXPECT_EQ(s.comparisons, 9u);
  EXPECT_EQ(s.accepted_by_delta.at(kDeltaLower).accepted, 1u);
  EXPECT_EQ(s.uncovered_edges, 0u);
  EXPECT_EQ(s.unverified_edges, 1u);  // {1, 4}: 4 never reported
  EXPECT_EQ(s.max_workload, 2u);
  EXPECT_EQ(s.greedy_max, 3u);
  EXPECT_EQ(s.messages, 8u);
  EXPECT_TRUE(s.stop_reason.empty());
  EXPECT_EQ(f.job.Kept().at(2), std::vector<uint32_t>({1, 3}));
}

TEST(LumosMcmcJob, CandidatesThatTieArePickedFromAndComparedPairwise) {
  // A path 0-1-2-3 with workloads 2, 0, 2, 0: 0 and 2 are both candidates
  // (not neighbours), they tie, and the server picks one of them.
  const Edges edges = {{0, 1}, {1, 2}, {2, 3}};
  Fleet f(McmcOptions(1, 3), {0, 1, 2, 3}, edges);
  f.workload = {{0, 2}, {1, 0}, {2, 2}, {3, 0}};
  RunKeys(f, {0, 1, 2, 3});
  const std::vector<DeviceData> records = f.Settle();
  EXPECT_EQ(f.starts.size(), 8u);  // 3 edges, then the candidate pair (0, 2)
  EXPECT_EQ(f.PairsSince(6), (std::set<std::pair<uint32_t, uint32_t>>{{0, 2}}));
  uint32_t device = 9;
  EXPECT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
  EXPECT_TRUE(device == 0 || device == 2) << device;
  // u kept nothing to give after all: the iteration is skipped.
  f.MoveDone(device, 1, false, 0);
  EXPECT_TRUE(f.Settle().empty());
  ASSERT_EQ(f.job.iterations().size(), 1u);
  EXPECT_EQ(f.job.iterations()[0].outcome, LumosMcmcOutcome::kSkipped);
  EXPECT_EQ(f.job.summary().skipped, 1u);
  EXPECT_EQ(f.rounds.back().round, 3u);
}

// Line 7 says f' > f (delta = +1): Eq. 18 accepts with e^-1, else the move
// is reverted. Over several seeds both branches are seen, and the revert
// is sent exactly when the iteration was not accepted.
TEST(LumosMcmcJob, AHigherMaximumIsAcceptedByChanceAndRevertedOtherwise) {
  const Edges edges = {{0, 1}, {1, 2}, {2, 3}};
  bool saw_accept = false, saw_reject = false;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Fleet f(McmcOptions(1, seed), {0, 1, 2, 3}, edges);
    f.workload = {{0, 0}, {1, 2}, {2, 1}, {3, 0}};
    RunKeys(f, {0, 1, 2, 3});
    std::vector<DeviceData> records = f.Settle();
    uint32_t device = 9;
    ASSERT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
    ASSERT_EQ(device, 1u);
    // Forced: after the move 2 holds more than 1 held before it.
    f.before[1] = 2;
    f.workload = {{0, 0}, {1, 1}, {2, 3}, {3, 0}};
    f.MoveDone(1, 1, false, 1);
    records = f.Settle();
    const SeenStart& last = f.starts.back();
    EXPECT_TRUE((last.device == 1 && last.start.value == mf::McmcValue::kBeforeMove) ||
                (last.device == 2 && last.start.value == mf::McmcValue::kWorkload));
    if (records.empty()) {
      // Accepted: the iteration is over already.
      ASSERT_EQ(f.job.iterations().size(), 1u);
      EXPECT_TRUE(f.job.iterations()[0].accepted);
      EXPECT_EQ(f.job.iterations()[0].outcome, LumosMcmcOutcome::kAcceptedHigher);
      saw_accept = true;
    } else {
      EXPECT_TRUE(f.job.iterations().empty());  // waits for the revert
      EXPECT_EQ(OnlyRecord(records, mf::kMcmcRevert, &device), 1u);
      EXPECT_EQ(device, 1u);
      f.MoveDone(1, 1, false, 1);  // not the revert's answer: ignored
      EXPECT_TRUE(f.job.iterations().empty());
      f.MoveDone(1, 1, true, 1);
      ASSERT_EQ(f.job.iterations().size(), 1u);
      EXPECT_FALSE(f.job.iterations()[0].accepted);
      EXPECT_EQ(f.job.iterations()[0].outcome, LumosMcmcOutcome::kRejectedHigher);
      EXPECT_EQ(f.job.summary().rejected, 1u);
      saw_reject = true;
    }
    const LumosMcmcIteration& it = f.job.iterations()[0];
    EXPECT_TRUE(it.compared);
    EXPECT_EQ(it.delta_class, kDeltaHigher);
    EXPECT_EQ(it.u2, 2u);
    EXPECT_EQ(f.job.summary().accepted_by_delta.at(kDeltaHigher).proposed, 1u);
    EXPECT_EQ(f.rounds.back().round, 3u);
  }
  EXPECT_TRUE(saw_accept);
  EXPECT_TRUE(saw_reject);
}

// Eq. 18 for delta = +1: accepted with probability e^-1 = 0.3679. Over
// 2,000 independently seeded jobs the acceptance rate must lie within
// 5 binomial standard deviations (0.054; p < 10^-6 for a correct job);
// accepting with e^-2 (0.135), 1/2 or always would be far outside.
TEST(LumosMcmcJob, AHigherMaximumIsAcceptedWithProbabilityEToTheMinusOne) {
  const Edges edges = {{0, 1}, {1, 2}, {2, 3}};
  constexpr int kRuns = 2000;
  int accepted = 0;
  for (uint64_t seed = 1; seed <= kRuns; ++seed) {
    Fleet f(McmcOptions(1, seed * 7919), {0, 1, 2, 3}, edges);
    f.workload = {{0, 0}, {1, 2}, {2, 1}, {3, 0}};
    RunKeys(f, {0, 1, 2, 3});
    std::vector<DeviceData> records = f.Settle();
    uint32_t device = 9;
    ASSERT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
    f.before[1] = 2;
    f.workload = {{0, 0}, {1, 1}, {2, 3}, {3, 0}};
    f.MoveDone(1, 1, false, 1);
    records = f.Settle();
    if (records.empty()) {
      ASSERT_EQ(f.job.iterations().size(), 1u);
      ASSERT_EQ(f.job.iterations()[0].outcome, LumosMcmcOutcome::kAcceptedHigher);
      ++accepted;
    } else {
      ASSERT_EQ(OnlyRecord(records, mf::kMcmcRevert, &device), 1u);
    }
  }
  const double p = std::exp(-1.0);
  const double sd = std::sqrt(p * (1 - p) / kRuns);
  EXPECT_NEAR(static_cast<double>(accepted) / kRuns, p, 5 * sd) << accepted << " of " << kRuns;
}

// An aborted comparison tells nothing: neither end is known to exceed the
// other. The step still waits for the cancelled party's answer (it holds a
// session slot until then) before the next step starts.
TEST(LumosMcmcJob, AnAbortedComparisonGivesNoInformationAndItsCancelIsAnswered) {
  const Edges edges = {{0, 1}, {1, 2}};
  Fleet f(McmcOptions(1, 1), {0, 1, 2}, edges);
  f.workload = {{0, 0}, {1, 2}, {2, 0}};
  f.abort_once.insert({0, 1});
  RunKeys(f, {0, 1, 2});
  std::vector<DeviceData> records = f.Settle();
  uint32_t device = 9;
  const uint32_t cancelled = OnlyRecord(records, mf::kMcmcSessionCancel, &device);
  EXPECT_EQ(device, 1u);
  EXPECT_EQ(f.starts.size(), 4u);  // no candidate step before the answer
  f.Keep(f.job.OnUpload(1, 2, mf::kMcmcSessionResult, Fleet::Aborted(cancelled), f.now));
  records = f.Settle();
  // 0 and 1 are both candidates now; their pair comparison picks 1.
  EXPECT_EQ(f.PairsSince(4), (std::set<std::pair<uint32_t, uint32_t>>{{0, 1}}));
  EXPECT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
  EXPECT_EQ(device, 1u);
  EXPECT_EQ(f.job.summary().sessions_aborted, 1u);
}

TEST(LumosMcmcJob, AMoveThatMissesItsDeadlineEndsTheIterations) {
  const Edges edges = {{0, 1}, {1, 2}};
  Fleet f(McmcOptions(5, 1), {0, 1, 2}, edges);
  f.workload = {{0, 0}, {1, 2}, {2, 0}};
  RunKeys(f, {0, 1, 2});
  const std::vector<DeviceData> records = f.Settle();
  uint32_t device = 9;
  ASSERT_EQ(OnlyRecord(records, mf::kMcmcMove, &device), 1u);
  f.now += 500'000;
  f.Keep(f.job.Poll(f.now));
  EXPECT_EQ(f.rounds.back().round, 2u);
  f.now += 600'000;
  f.Keep(f.job.Poll(f.now));
  ASSERT_EQ(f.rounds.back().round, 3u);
  EXPECT_EQ(f.job.summary().stop_reason, "move deadline at iteration 1");
  EXPECT_TRUE(f.job.iterations().empty());
  // Every edge still covered: the job succeeds with what it did.
  f.ReportAll({{1, {0, 2}}}, 2);
  EXPECT_TRUE(f.job.finished());
  EXPECT_TRUE(f.job.succeeded());
}

TEST(LumosMcmcJob, AnEdgeNeitherEndKeepsFailsTheJob) {
  const Edges edges = {{0, 1}, {1, 2}};
  Fleet f(McmcOptions(1, 1), {0, 1, 2}, edges);
  f.workload = {{0, 0}, {1, 2}, {2, 0}};
  RunKeys(f, {0, 1, 2});
  uint32_t device = 9;
  ASSERT_EQ(OnlyRecord(f.Settle(), mf::kMcmcMove, &device), 1u);
  f.before[1] = 2;
  f.workload = {{0, 1}, {1, 1}, {2, 0}};
  f.MoveDone(1, 1, false, 1);
  f.Settle();
  ASSERT_EQ(f.rounds.back().round, 3u);
  f.ReportAll({{0, {1}}}, 2);  // nobody keeps {1, 2}
  EXPECT_TRUE(f.job.finished());
  EXPECT_EQ(f.job.summary().uncovered_edges, 1u);
  EXPECT_FALSE(f.job.succeeded());
}

// Many iterations against devices that really move edges (a plaintext
// model of the device role: k uniform in 1..max(1, round(ln n)), each
// given edge kept by the receiver, undone on a revert), one session per
// device at a time so that every step is paced: every iteration ends, the
// final orientation covers every edge, and what the devices keep is what
// the server checks.
TEST(LumosMcmcJob, ManyPacedIterationsKeepEveryEdgeCovered) {
  const Edges edges = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {2, 7}};
  std::vector<uint32_t> ids = {0, 1, 2, 3, 4, 5, 6, 7};
  LumosMcmcOptions o = McmcOptions(30, 11);
  o.max_sessions = 1;
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) / "lumos-mcmc-job-test";
  std::filesystem::remove_all(out);
  o.output_dir = out.string();
  Fleet f(o, ids, edges);
  std::map<uint32_t, std::set<uint32_t>> keeps, neighbours;
  for (const auto& [a, b] : edges) {
    neighbours[a].insert(b);
    neighbours[b].insert(a);
  }
  // Greedy-like start: the lower id keeps every edge.
  for (const auto& [a, b] : edges) keeps[a].insert(b);
  const auto sync = [&] {
    for (uint32_t id : ids) f.workload[id] = static_cast<uint32_t>(keeps[id].size());
  };
  sync();
  uint32_t greedy_max = 0;
  for (uint32_t id : ids) greedy_max = std::max(greedy_max, f.workload[id]);
  std::mt19937_64 device_rng(5);
  std::vector<std::pair<uint32_t, bool>> undo;  // receiver, it kept the edge already
  RunKeys(f, ids);
  int guard = 0;
  while (f.rounds.back().round != 3 && ++guard < 1000) {
    const std::vector<DeviceData> records = f.Settle();
    if (f.rounds.back().round == 3) break;
    ASSERT_EQ(records.size(), 1u);
    const uint32_t u = records[0].device, iteration = U32(records[0].bytes);
    if (records[0].kind == mf::kMcmcMove) {
      std::vector<uint32_t> kept(keeps[u].begin(), keeps[u].end());
      undo.clear();
      f.before[u] = static_cast<uint32_t>(kept.size());
      if (!kept.empty()) {
        const uint64_t hi = std::max<uint64_t>(1, std::lround(std::log(static_cast<double>(kept.size()))));
        const uint64_t k = std::min<uint64_t>(kept.size(), 1 + device_rng() % hi);
        std::shuffle(kept.begin(), kept.end(), device_rng);
        for (uint64_t i = 0; i < k; ++i) {
          undo.push_back({kept[i], keeps[kept[i]].contains(u)});
          keeps[u].erase(kept[i]);
          keeps[kept[i]].insert(u);
        }
      }
      sync();
      f.MoveDone(u, iteration, false, static_cast<uint32_t>(undo.size()));
    } else {
      ASSERT_EQ(records[0].kind, mf::kMcmcRevert);
      for (const auto& [v, had] : undo) {
        keeps[u].insert(v);
        if (!had) keeps[v].erase(u);
      }
      sync();
      f.MoveDone(u, iteration, true, static_cast<uint32_t>(undo.size()));
    }
  }
  ASSERT_EQ(f.rounds.back().round, 3u);
  std::map<uint32_t, std::vector<uint32_t>> lists;
  for (const auto& [id, set] : keeps) lists[id] = std::vector<uint32_t>(set.begin(), set.end());
  f.ReportAll(lists, greedy_max);
  ASSERT_TRUE(f.job.finished());
  EXPECT_TRUE(f.job.succeeded()) << f.job.summary().error;
  const LumosMcmcSummary& s = f.job.summary();
  EXPECT_TRUE(s.stop_reason.empty()) << s.stop_reason;
  EXPECT_EQ(s.iterations_run, 30u);
  EXPECT_EQ(s.accepted + s.rejected + s.skipped, 30u);
  EXPECT_EQ(s.sessions_aborted, 0u);
  uint64_t comparisons = 0;
  for (const LumosMcmcIteration& it : f.job.iterations()) {
    comparisons += it.comparisons;
    // Every iteration compares every edge at least once (line 2's Alg. 3).
    EXPECT_GE(it.comparisons, edges.size());
  }
  EXPECT_EQ(comparisons, s.comparisons);
  EXPECT_EQ(f.job.Kept(), lists);
  // One line per iteration after the header; one per device in the others.
  const auto lines = [](const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);) all.push_back(line);
    return all;
  };
  const std::vector<std::string> iterations = lines(out / "lumos-mcmc-iterations.tsv");
  ASSERT_EQ(iterations.size(), 31u);
  EXPECT_EQ(iterations[0], "iteration\tu\tmoved\tu2\toutcome\tcomparisons\tseconds");
  EXPECT_EQ(lines(out / "lumos-workloads.tsv").size(), ids.size() + 1);
  EXPECT_EQ(lines(out / "lumos-trees.tsv").size(), ids.size());
  EXPECT_EQ(s.iterations_path, (out / "lumos-mcmc-iterations.tsv").string());
  std::filesystem::remove_all(out);
}

TEST(LumosMcmcPlan, McmcNeedsPaperPrivacyAndRunsAfterTheGreedyStage) {
  ServerConfig config = DefaultServerConfigWithJobs();
  config.tls_ca_cert = "ca.crt";
  config.tls_server_cert = "server.crt";
  config.tls_server_key = "server.key";
  config.credentials_dir = "creds";
  config.job = "lumos-trees";
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-trim"}));
  Options<LumosJobConfig>(config).method = "mcmc";
  const ConfigStatus strict = ValidateConfig(config);
  EXPECT_FALSE(strict.ok);
  EXPECT_NE(strict.message.find("lumos_method: mcmc needs lumos_privacy=paper"), std::string::npos) << strict.message;
  Options<LumosJobConfig>(config).privacy = "paper";
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-mcmc"}));
  Options<LumosJobConfig>(config).mcmc_iterations = 0;
  EXPECT_NE(ValidateConfig(config).message.find("lumos_mcmc_iterations: must be at least 1"), std::string::npos);
  Options<LumosJobConfig>(config).mcmc_iterations = 300;
  Options<LumosJobConfig>(config).method = "anneal";
  EXPECT_NE(ValidateConfig(config).message.find("lumos_method: 'anneal' is not exact or mcmc"), std::string::npos);
}

TEST(LumosMcmcJobTest, TheComparisonWidthHoldsTheLargestDegreeAndNoMore) {
  // A star of five leaves: degree 5 needs 3 bits (base-OT cost grows with
  // the width, so a wider one would only cost CPU).
  Edges star = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}};
  for (const auto& [width, want] : std::vector<std::pair<uint8_t, uint8_t>>{{0, 3}, {12, 12}}) {
    LumosMcmcOptions o = McmcOptions(1, 1);
    o.width = width;
    LumosMcmcJob job(o, {0, 1, 2, 3, 4, 5}, star);
    std::vector<RoundStart> started = job.Begin(1000);
    ASSERT_EQ(started.size(), 1u);
    Result<mf::McmcRoundParameters> p = mf::DecodeMcmcParameters(ConstByteSpan(started[0].parameters));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->width, want) << "asked " << int(width);
  }
}

}  // namespace
}  // namespace nodefl::server::jobs
