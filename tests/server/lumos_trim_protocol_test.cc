// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-trim job end to end in one process, without TLS: the server's
// LumosTrimJob against real DeviceSessions running LumosTrimRole, joined by
// a fake network that delivers every message in a random order (keeping
// the order of each connection, as TCP and the relay do). After every single
// delivery the test checks Lumos Eq. 10 over every device's own state: each
// edge kept by at least one endpoint, whatever is in flight, late, or lost
// with a device that went away.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "lumos_trim_fleet.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/trim_role.h"
#include "nodefl/server/lumos/trimming/trimming.h"
#include "session_frames.h"

namespace nodefl::lumos {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using fleet::Fleet;
using fleet::Graph;
using fleet::KeysFor;
using fleet::MakeGraph;
using Options = fleet::FleetOptions;
namespace jobs = server::jobs;
namespace ref = server::lumos;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

Graph RandomGraph(uint32_t n, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(p);
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t a = 0; a < n; ++a) {
    for (uint32_t b = a + 1; b < n; ++b) {
      if (coin(rng)) e.push_back({a, b});
    }
  }
  return MakeGraph(n, e);
}

// Preferential attachment: hubs, as in the social graphs Lumos targets.
Graph HubGraph(uint32_t n, uint32_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> ends;
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t v = 1; v < n; ++v) {
    for (uint32_t k = 0; k < std::min(m, v); ++k) {
      const uint32_t u = ends.empty() ? 0 : ends[rng() % ends.size()];
      e.push_back({u, v});
      ends.push_back(u);
      ends.push_back(v);
    }
  }
  return MakeGraph(n, e);
}

// The optimum (ceil of the maximum density), from the plaintext reference.
uint32_t Optimum(const Graph& g) {
  const ref::TrimGraph tg(g.n, g.edges);
  return ref::Exact(ref::Greedy(tg)).max_workload();
}

// Nothing the harness checks on the way went wrong (every edge covered
// after every delivery, one message size, sessions healthy).
void ExpectClean(const Fleet& fleet) {
  EXPECT_TRUE(fleet.errors().empty()) << fleet.errors().front();
  EXPECT_EQ(fleet.Uncovered(), 0u);
}

void ExpectOptimal(const Graph& g, const Options& o) {
  Fleet fleet(g, o);
  ASSERT_TRUE(fleet.Run());
  ExpectClean(fleet);
  const jobs::LumosTrimSummary& s = fleet.job().summary();
  EXPECT_TRUE(fleet.job().succeeded()) << "error '" << s.error << "', absent " << s.absent.size();
  EXPECT_TRUE(s.certified);
  EXPECT_EQ(fleet.MaxWorkload(), Optimum(g));
  EXPECT_EQ(s.max_workload, fleet.MaxWorkload());
  EXPECT_EQ(s.optimum, Optimum(g));
  EXPECT_EQ(fleet.KeptTwice(), 0u);
  EXPECT_EQ(s.uncovered_edges, 0u);
  EXPECT_EQ(s.unverified_edges, 0u);
  // What the job reports is what the devices hold.
  const auto workloads = fleet.job().Workloads();
  ASSERT_EQ(workloads.size(), g.n);
  for (uint32_t v = 0; v < g.n; ++v) EXPECT_EQ(workloads.at(v), fleet.role(v).workload());
  EXPECT_GT(fleet.coverage_checks(), 0u);
  // Greedy (after the tie drop) left work to do, so devices talked.
  if (s.start_max > Optimum(g)) {
    EXPECT_GT(s.messages, 0u);
  }
}

TEST(LumosTrimProtocolTest, ReachesTheOptimumOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    ExpectOptimal(RandomGraph(24, 0.25, seed), {.seed = seed});
  }
}

TEST(LumosTrimProtocolTest, ReachesTheOptimumOnHubGraphs) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    ExpectOptimal(HubGraph(60, 3, seed), {.seed = seed});
  }
  ExpectOptimal(HubGraph(300, 4, 7), {.seed = 7});
}

TEST(LumosTrimProtocolTest, ReachesTheOptimumWhenSearchesOvertakeJobStarts) {
  // Devices learn of a step from a neighbour's search before the server's
  // JobStart for it, in every step.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    ExpectOptimal(HubGraph(40, 3, seed), {.seed = seed, .relays_first = true});
  }
}

TEST(LumosTrimProtocolTest, StrictModeKeepsTheListsOnTheDevices) {
  Fleet fleet(HubGraph(40, 3, 9), {.seed = 9, .upload_kept = false});
  ASSERT_TRUE(fleet.Run());
  ExpectClean(fleet);
  const jobs::LumosTrimSummary& s = fleet.job().summary();
  EXPECT_TRUE(fleet.job().succeeded());
  EXPECT_TRUE(s.trees_path.empty());
  EXPECT_EQ(fleet.MaxWorkload(), Optimum(HubGraph(40, 3, 9)));
}

TEST(LumosTrimProtocolTest, AbortedComparisonsKeepEdgesCoveredAndAreNotCertified) {
  const Graph g = HubGraph(50, 3, 5);
  Fleet fleet(g, {.seed = 5, .aborted = 0.2});
  ASSERT_TRUE(fleet.Run());
  ExpectClean(fleet);
  const jobs::LumosTrimSummary& s = fleet.job().summary();
  EXPECT_GT(s.unsettled, 0u);
  // Edges kept twice may hold the maximum above the optimum: the job says so.
  EXPECT_FALSE(s.certified);
  EXPECT_FALSE(fleet.job().succeeded());
  EXPECT_EQ(s.uncovered_edges, 0u);
  EXPECT_EQ(s.uncovered_local, 0u);
  EXPECT_GE(fleet.MaxWorkload(), Optimum(g));
}

TEST(LumosTrimProtocolTest, ADeviceThatLeavesMidDrainLeavesNoEdgeUncovered) {
  uint32_t departures = 0;
  for (uint32_t step : {1u, 2u, 3u}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(::testing::Message() << "step " << step << " seed " << seed);
      const Graph g = HubGraph(400, 5, seed);
      Fleet fleet(g, {.seed = seed, .kill_at_step = step});
      ASSERT_TRUE(fleet.Run());  // deadlines, not a hang
      ExpectClean(fleet);
      const jobs::LumosTrimSummary& s = fleet.job().summary();
      if (fleet.killed() == UINT32_MAX) continue;  // finished before that step
      ++departures;
      // Coverage was checked after every delivery, the departed device's
      // state included; the job knows it lost someone and says so.
      EXPECT_FALSE(s.certified);
      EXPECT_FALSE(fleet.job().succeeded());
      EXPECT_NE(std::find(s.absent.begin(), s.absent.end(), fleet.killed()), s.absent.end());
      EXPECT_EQ(s.uncovered_edges, 0u);
      EXPECT_EQ(s.uncovered_local, 0u);
      // Every other device finished and reported.
      EXPECT_EQ(s.missed_report.size(), 1u);
      // Nobody's workload grew past where it started (drains never raise the
      // maximum).
      EXPECT_LE(fleet.MaxWorkload(), s.greedy_max);
    }
  }
  EXPECT_GE(departures, 3u);  // the others finished before their step (deterministic: fixed seeds)
}

TEST(LumosTrimProtocolTest, TiesAreDroppedByTheLowerIdBeforeAnyMessage) {
  // A triangle of equal degrees: Alg. 1 keeps every edge twice; after the
  // drop by the lower id each edge is kept once and the workloads are
  // already optimal (1 each), so the job ends without a relayed message.
  const Graph g = MakeGraph(3, {{0, 1}, {1, 2}, {0, 2}});
  Fleet fleet(g, {});
  ExpectClean(fleet);
  EXPECT_EQ(fleet.role(0).workload(), 0u);  // 0 < 1 and 0 < 2: drops both
  EXPECT_EQ(fleet.role(1).workload(), 1u);  // keeps 0
  EXPECT_EQ(fleet.role(2).workload(), 2u);  // keeps 0 and 1
  ASSERT_TRUE(fleet.Run());
  EXPECT_TRUE(fleet.job().succeeded());
  EXPECT_EQ(fleet.MaxWorkload(), 1u);
  EXPECT_EQ(fleet.KeptTwice(), 0u);
}

TEST(LumosTrimProtocolTest, ARepeatedJobOnTheSameBindingIsRefused) {
  // The keys' counters must never restart: one job per binding.
  const Graph g = MakeGraph(2, {{0, 1}});
  std::vector<TrimPeer> peers(1);
  peers[0].id = 1;
  peers[0].keys = KeysFor(0, 1);
  peers[0].keyed = true;
  peers[0].keep = true;
  LumosTrimRole role(0, Span<TrimPeer>(peers.data(), peers.size()));
  ASSERT_TRUE(role.Init().ok());
  role.Bind(1);
  std::vector<uint8_t> frame(kMaxFrame), out(4 * kMaxFrame);
  SessionOptions so;
  so.device_id = 0;
  DeviceSession session(so, SessionBuffers{ByteSpan(frame), ByteSpan(out)});
  ASSERT_TRUE(session.AddRole(role).ok());
  ASSERT_TRUE(session.Start(1).ok());
  session.ConsumeOutput(session.PendingOutput().size());
  uint64_t seq = 0;
  const auto feed = [&](nodefl_wire_Envelope e) {
    const std::vector<uint8_t> f = ::nodefl::testing::FrameTo(e, ++seq);
    size_t consumed = 0;
    ASSERT_TRUE(session.OnReceived(ConstByteSpan(f), 2, &consumed).ok());
    ASSERT_TRUE(session.Poll(2).ok());
  };
  auto w = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
  w.body.welcome.resume_token.size = 32;
  feed(w);
  session.ConsumeOutput(session.PendingOutput().size());
  std::vector<uint32_t> codes;
  const auto start = [&](uint64_t job) {
    auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, job, 1);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
    uint8_t params[kTrimParametersBytes];
    ASSERT_TRUE(EncodeTrimParameters({.phase = TrimPhase::kReady}, ByteSpan(params)).ok());
    std::memcpy(e.body.job_start.parameters.bytes, params, sizeof(params));
    e.body.job_start.parameters.size = sizeof(params);
    feed(e);
    ::nodefl::testing::DrainSessionOutput(session, [&](const nodefl_wire_Envelope& m) {
      if (m.which_body == nodefl_wire_Envelope_job_report_tag) codes.push_back(m.body.job_report.code);
    });
  };
  start(7);
  start(8);
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], static_cast<uint32_t>(StatusCode::kOk));
  EXPECT_EQ(codes[1], static_cast<uint32_t>(StatusCode::kFailedPrecondition));
}

TEST(LumosTrimFormatTest, RoundTripsAndRefusesMalformedRecords) {
  uint8_t buf[64];
  const TrimMessage m{TrimMessageType::kEcho, true, 9, 40};
  ASSERT_TRUE(EncodeTrimMessage(m, ByteSpan(buf)).ok());
  Result<TrimMessage> back = DecodeTrimMessage(ConstByteSpan(buf, kTrimMessageBytes));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, TrimMessageType::kEcho);
  EXPECT_TRUE(back->reverse);
  EXPECT_EQ(back->step, 9u);
  EXPECT_EQ(back->threshold, 40u);
  // A search never carries the reverse flag; step 0 does not exist.
  EXPECT_FALSE(EncodeTrimMessage({TrimMessageType::kSearch, true, 1, 1}, ByteSpan(buf)).ok());
  EXPECT_FALSE(EncodeTrimMessage({TrimMessageType::kEcho, false, 0, 1}, ByteSpan(buf)).ok());
  buf[1] = 3;
  EXPECT_FALSE(DecodeTrimMessage(ConstByteSpan(buf, kTrimMessageBytes)).ok());
  EXPECT_FALSE(DecodeTrimMessage(ConstByteSpan(buf, kTrimMessageBytes - 1)).ok());

  ASSERT_TRUE(EncodeTrimParameters({TrimPhase::kDrain, 12, 3, false}, ByteSpan(buf)).ok());
  Result<TrimRoundParameters> p = DecodeTrimParameters(ConstByteSpan(buf, kTrimParametersBytes));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threshold, 12u);
  EXPECT_EQ(p->step, 3u);
  buf[2] = 2;  // an unknown flag
  EXPECT_FALSE(DecodeTrimParameters(ConstByteSpan(buf, kTrimParametersBytes)).ok());
  EXPECT_FALSE(EncodeTrimParameters({TrimPhase::kDrain, 12, 0, false}, ByteSpan(buf)).ok());

  // Only a root reports relief or being still over.
  EXPECT_FALSE(EncodeTrimStepOutcome({1, false, true, 0}, ByteSpan(buf)).ok());
  ASSERT_TRUE(EncodeTrimStepOutcome({5, true, true, 2}, ByteSpan(buf)).ok());
  Result<TrimStepOutcome> o = DecodeTrimStepOutcome(ConstByteSpan(buf, kTrimStepOutcomeBytes));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->relief, 2u);
  buf[4] = 2;  // still over without being a root
  EXPECT_FALSE(DecodeTrimStepOutcome(ConstByteSpan(buf, kTrimStepOutcomeBytes)).ok());

  TrimSummary s;
  s.workload = 3;
  s.unsettled = 4;
  s.rejected = 5;
  ASSERT_TRUE(EncodeTrimSummary(s, ByteSpan(buf)).ok());
  Result<TrimSummary> sb = DecodeTrimSummary(ConstByteSpan(buf, kTrimSummaryBytes));
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->workload, 3u);
  EXPECT_EQ(sb->unsettled, 4u);
  EXPECT_EQ(sb->rejected, 5u);
}

}  // namespace
}  // namespace nodefl::lumos
