// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosTrimRole on its own (host and, under emulation, the ARM targets): a
// few DeviceSessions running the role behind a scripted server that moves
// each RelaySend to its destination in order and records the records the
// devices send it. The whole job, with the server's coordinator, is tested
// in tests/server/lumos_trim_protocol_test.cc.
#include "nodefl/lumos/trim_role.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "heap_counter.h"
#include "lumos_test_keys.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/trim_binding.h"
#include "nodefl/lumos/trim_sizing.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/seal/seal.h"
#include "session_frames.h"

namespace nodefl::lumos {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x2a;

using testing::KeysFor;

struct Sent {
  uint32_t from = 0, to = 0;
  std::vector<uint8_t> sealed;
};

class Net {
 public:
  // `keeps[v]`: the neighbours v keeps; `adj[v]`: all its neighbours.
  Net(const std::vector<std::vector<uint32_t>>& adj, const std::vector<std::vector<uint32_t>>& keeps) {
    for (uint32_t v = 0; v < adj.size(); ++v) {
      auto d = std::make_unique<Dev>();
      d->peers.resize(adj[v].size());
      for (size_t i = 0; i < adj[v].size(); ++i) {
        TrimPeer& p = d->peers[i];
        p.id = adj[v][i];
        p.keys = KeysFor(v, p.id);
        p.keyed = true;
        bool keep = false;
        for (uint32_t k : keeps[v]) keep = keep || k == p.id;
        p.keep = keep;
        p.peer_keeps = !keep;
      }
      d->role = std::make_unique<LumosTrimRole>(v, Span<TrimPeer>(d->peers.data(), d->peers.size()));
      EXPECT_TRUE(d->role->Init().ok());
      d->role->Bind(static_cast<uint32_t>(keeps[v].size()));
      d->frame.resize(kMaxFrame);
      d->out.resize(8 * kMaxFrame);
      SessionOptions so;
      so.device_id = v;
      so.ack_every = 1000;
      d->session = std::make_unique<DeviceSession>(so, SessionBuffers{ByteSpan(d->frame), ByteSpan(d->out)});
      EXPECT_TRUE(d->session->AddRole(*d->role).ok());
      EXPECT_TRUE(d->session->Start(1).ok());
      d->session->ConsumeOutput(d->session->PendingOutput().size());
      auto w = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      w.body.welcome.resume_token.size = 32;
      devs_.push_back(std::move(d));
      Feed(static_cast<uint32_t>(v), w);
    }
  }

  LumosTrimRole& role(uint32_t v) { return *devs_[v]->role; }
  // A frame for `v` built ahead (the harness allocates; the device need not).
  std::vector<uint8_t> StartFrame(uint32_t v, uint32_t round, const TrimRoundParameters& p) {
    auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, kJob, round);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
    uint8_t params[kTrimParametersBytes];
    EXPECT_TRUE(EncodeTrimParameters(p, ByteSpan(params)).ok());
    std::memcpy(e.body.job_start.parameters.bytes, params, sizeof(params));
    e.body.job_start.parameters.size = sizeof(params);
    return ::nodefl::testing::FrameTo(e, ++devs_[v]->seq);
  }
  // The connection broke and came back (the server kept the session).
  void Reconnect(uint32_t v) {
    Dev& d = *devs_[v];
    ASSERT_TRUE(d.session->Reconnect(3).ok());
    d.session->ConsumeOutput(d.session->PendingOutput().size());  // Hello
    d.seq = 0;
    auto w = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
    w.body.welcome.resume_token.size = 32;
    w.body.welcome.resumed = true;
    Feed(v, w);
  }
  // Only the device's own work: receive a prepared frame and poll.
  void Receive(uint32_t v, const std::vector<uint8_t>& frame) {
    size_t consumed = 0;
    EXPECT_TRUE(devs_[v]->session->OnReceived(ConstByteSpan(frame), 2, &consumed).ok());
    EXPECT_EQ(consumed, frame.size());
    EXPECT_TRUE(devs_[v]->session->Poll(2).ok());
  }
  const std::vector<TrimStepOutcome>& outcomes(uint32_t v) { return outcomes_[v]; }
  std::vector<uint32_t> report_codes(uint32_t v) { return reports_[v]; }
  std::deque<Sent>& in_flight() { return relay_; }

  void Start(uint32_t v, uint32_t round, const TrimRoundParameters& p) {
    auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, kJob, round);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
    uint8_t params[kTrimParametersBytes];
    EXPECT_TRUE(EncodeTrimParameters(p, ByteSpan(params)).ok());
    std::memcpy(e.body.job_start.parameters.bytes, params, sizeof(params));
    e.body.job_start.parameters.size = sizeof(params);
    Feed(v, e);
  }
  void StartAll(uint32_t round, const TrimRoundParameters& p) {
    for (uint32_t v = 0; v < devs_.size(); ++v) Start(v, round, p);
  }
  void Absent(uint32_t v, const std::vector<uint32_t>& ids) {
    auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_data_tag, kJob, 2);
    e.body.job_data.kind = kTrimAbsent;
    for (size_t i = 0; i < ids.size(); ++i) StoreU32Le(ids[i], e.body.job_data.data.bytes + 4 * i);
    e.body.job_data.data.size = static_cast<pb_size_t>(4 * ids.size());
    Feed(v, e);
  }
  void Deliver(const Sent& s) {
    auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_relay_deliver_tag, kJob, 0);
    e.body.relay_deliver.src = s.from;
    e.body.relay_deliver.relay_id = ++devs_[s.to]->relay_id;
    std::memcpy(e.body.relay_deliver.sealed.bytes, s.sealed.data(), s.sealed.size());
    e.body.relay_deliver.sealed.size = static_cast<pb_size_t>(s.sealed.size());
    Feed(s.to, e);
  }
  // Delivers everything in flight, in order, until nothing is left.
  size_t DeliverAll() {
    size_t n = 0;
    while (!relay_.empty()) {
      const Sent s = relay_.front();
      relay_.pop_front();
      Deliver(s);
      ++n;
    }
    return n;
  }

 private:
  struct Dev {
    std::vector<TrimPeer> peers;
    std::unique_ptr<LumosTrimRole> role;
    std::vector<uint8_t> frame, out;
    std::unique_ptr<DeviceSession> session;
    uint64_t seq = 0, relay_id = 0;
  };

  void Feed(uint32_t v, const nodefl_wire_Envelope& e) {
    Dev& d = *devs_[v];
    const std::vector<uint8_t> f = ::nodefl::testing::FrameTo(e, ++d.seq);
    size_t pos = 0;
    while (pos < f.size()) {
      size_t consumed = 0;
      ASSERT_TRUE(d.session->OnReceived(ConstByteSpan(f).subspan(pos), 2, &consumed).ok());
      pos += consumed;
    }
    ASSERT_TRUE(d.session->Poll(2).ok());
    ::nodefl::testing::DrainSessionOutput(*d.session, [&](const nodefl_wire_Envelope& m) {
      if (m.which_body == nodefl_wire_Envelope_relay_send_tag) {
        const auto& r = m.body.relay_send;
        relay_.push_back({v, r.dst, std::vector<uint8_t>(r.sealed.bytes, r.sealed.bytes + r.sealed.size)});
      } else if (m.which_body == nodefl_wire_Envelope_job_data_tag && m.body.job_data.kind == kTrimStepOutcome) {
        Result<TrimStepOutcome> o = DecodeTrimStepOutcome(protocol::BytesOf(m.body.job_data.data));
        ASSERT_TRUE(o.ok());
        outcomes_[v].push_back(*o);
      } else if (m.which_body == nodefl_wire_Envelope_job_report_tag) {
        reports_[v].push_back(m.body.job_report.code);
      }
    });
  }

  std::vector<std::unique_ptr<Dev>> devs_;
  std::deque<Sent> relay_;
  std::map<uint32_t, std::vector<TrimStepOutcome>> outcomes_;
  std::map<uint32_t, std::vector<uint32_t>> reports_;
};

TrimRoundParameters Ready() { return {TrimPhase::kReady, 0, 0, false}; }
TrimRoundParameters Drain(uint32_t step, uint32_t t) { return {TrimPhase::kDrain, t, step, false}; }

bool Keeps(LumosTrimRole& r, uint32_t peer) {
  for (const TrimPeer& p : r.peers()) {
    if (p.id == peer) return p.keep;
  }
  return false;
}

TEST(LumosTrimRoleTest, ARootShedsToEveryNeighbourBelowTheThreshold) {
  // A star kept by its centre: at T = 1 every leaf accepts.
  Net net({{1, 2, 3}, {0}, {0}, {0}}, {{1, 2, 3}, {}, {}, {}});
  net.StartAll(1, Ready());
  EXPECT_EQ(net.report_codes(0), (std::vector<uint32_t>{0}));
  net.StartAll(2, Drain(1, 1));
  EXPECT_EQ(net.in_flight().size(), 3u);  // the centre's searches
  EXPECT_EQ(net.DeliverAll(), 6u);        // and one reverse echo each
  EXPECT_EQ(net.role(0).workload(), 0u);
  for (uint32_t leaf = 1; leaf <= 3; ++leaf) {
    EXPECT_EQ(net.role(leaf).workload(), 1u);
    EXPECT_TRUE(Keeps(net.role(leaf), 0));
    ASSERT_EQ(net.outcomes(leaf).size(), 1u);
    EXPECT_FALSE(net.outcomes(leaf)[0].root);
  }
  ASSERT_EQ(net.outcomes(0).size(), 1u);
  EXPECT_TRUE(net.outcomes(0)[0].root);
  EXPECT_EQ(net.outcomes(0)[0].relief, 3u);
  EXPECT_FALSE(net.outcomes(0)[0].still_over);
  EXPECT_EQ(net.role(0).Uncovered(), 0u);
}

TEST(LumosTrimRoleTest, ARelayAtTheThresholdPassesOneReversalUp) {
  // 0 keeps 1, 3, 4 (workload 3); 1 keeps 2 (workload 1 = T): the path
  // 0 -> 1 -> 2 is reversed through 1, whose workload stays 1.
  Net net({{1, 3, 4}, {0, 2}, {1}, {0}, {0}}, {{1, 3, 4}, {2}, {}, {}, {}});
  net.StartAll(1, Ready());
  net.StartAll(2, Drain(1, 1));
  net.DeliverAll();
  EXPECT_EQ(net.role(0).workload(), 0u);
  EXPECT_EQ(net.role(1).workload(), 1u);
  EXPECT_TRUE(Keeps(net.role(1), 0));
  EXPECT_FALSE(Keeps(net.role(1), 2));
  EXPECT_TRUE(Keeps(net.role(2), 1));
  EXPECT_EQ(net.role(1).stats().passed_up, 1u);
  EXPECT_EQ(net.outcomes(0).back().relief, 3u);
  for (uint32_t v = 0; v < 5; ++v) EXPECT_EQ(net.role(v).Uncovered(), 0u) << v;
}

TEST(LumosTrimRoleTest, ASecondSearchGetsAPlainEcho) {
  // A triangle plus a tail: 0 keeps 1 and 2, 1 keeps 2, both 0 and 1 are
  // above T = 0... use T = 1: 0 (workload 2) is the root; 1 (workload 1)
  // relays to 2, which 0 reached first or second: 2 has workload 0 and
  // accepts once; the other search is answered without a reversal.
  Net net({{1, 2}, {0, 2}, {0, 1}}, {{1, 2}, {2}, {}});
  net.StartAll(1, Ready());
  net.StartAll(2, Drain(1, 1));
  net.DeliverAll();
  EXPECT_EQ(net.role(2).stats().accepted, 1u);
  EXPECT_EQ(net.role(2).workload(), 1u);
  EXPECT_EQ(net.role(0).workload() + net.role(1).workload() + net.role(2).workload(), 3u);
  EXPECT_LE(net.role(0).workload(), 1u);
  for (uint32_t v = 0; v < 3; ++v) EXPECT_EQ(net.role(v).Uncovered(), 0u) << v;
}

TEST(LumosTrimRoleTest, ASearchMayStartTheStepBeforeItsJobStart) {
  Net net({{1}, {0}}, {{1}, {}});
  net.StartAll(1, Ready());
  net.Start(0, 2, Drain(1, 0));  // only the root hears of step 1
  ASSERT_EQ(net.in_flight().size(), 1u);
  // 1 learns of the step from the search (workload 0 is not below 0: it
  // relays to nobody and answers at once).
  EXPECT_EQ(net.DeliverAll(), 2u);
  EXPECT_EQ(net.role(1).step(), 1u);
  EXPECT_EQ(net.role(1).stats().accepted, 0u);
  ASSERT_EQ(net.outcomes(1).size(), 1u);  // its outcome went out with the step
  net.Start(1, 2, Drain(1, 0));  // the late JobStart changes nothing
  EXPECT_EQ(net.outcomes(1).size(), 1u);
  EXPECT_TRUE(net.in_flight().empty());
  ASSERT_EQ(net.outcomes(0).size(), 1u);
  EXPECT_TRUE(net.outcomes(0)[0].root);
  EXPECT_EQ(net.outcomes(0)[0].relief, 0u);
  EXPECT_TRUE(net.outcomes(0)[0].still_over);
  EXPECT_TRUE(Keeps(net.role(0), 1));
}

TEST(LumosTrimRoleTest, AnAbsentNeighbourIsNeitherSearchedNorAwaited) {
  Net net({{1, 2}, {0}, {0}}, {{1, 2}, {}, {}});
  net.StartAll(1, Ready());
  net.StartAll(2, Drain(1, 1));
  // 2 goes away: its search is lost, and the server says so.
  std::deque<Sent> kept;
  for (const Sent& s : net.in_flight()) {
    if (s.to != 2) kept.push_back(s);
  }
  net.in_flight() = kept;
  net.DeliverAll();
  EXPECT_TRUE(net.outcomes(0).empty());  // still waiting for 2
  net.Absent(0, {2});
  ASSERT_EQ(net.outcomes(0).size(), 1u);
  EXPECT_EQ(net.outcomes(0)[0].relief, 1u);
  EXPECT_TRUE(net.outcomes(0)[0].still_over == (net.role(0).workload() > 1));
  EXPECT_TRUE(Keeps(net.role(0), 2));  // its edge stays where it was
  // Next step: no search goes to 2 any more.
  net.StartAll(3, Drain(2, 0));
  for (const Sent& s : net.in_flight()) EXPECT_NE(s.to, 2u);
}

TEST(LumosTrimRoleTest, ReplaysStrangersAndGarbageAreCountedNotFollowed) {
  Net net({{1}, {0}}, {{1}, {}});
  net.StartAll(1, Ready());
  net.StartAll(2, Drain(1, 0));
  ASSERT_EQ(net.in_flight().size(), 1u);
  const Sent search = net.in_flight().front();
  net.DeliverAll();
  const uint32_t received = net.role(1).stats().messages_received;
  net.Deliver(search);  // the very same message again
  EXPECT_EQ(net.role(1).stats().duplicates, 1u);
  Sent stranger = search;
  stranger.from = 7;  // not a neighbour
  net.Deliver(stranger);
  Sent altered = search;
  altered.sealed[20] ^= 1;
  net.Deliver(altered);
  EXPECT_EQ(net.role(1).stats().rejected, 2u);
  EXPECT_EQ(net.role(1).stats().messages_received, received);
  net.DeliverAll();
  EXPECT_TRUE(net.in_flight().empty());
}

TEST(LumosTrimRoleTest, AReconnectRepeatsTheStepOutcome) {
  // The outcome may have died with the old connection; the server ignores
  // a repeat of one it has.
  Net net({{1}, {0}}, {{1}, {}});
  net.StartAll(1, Ready());
  net.StartAll(2, Drain(1, 5));
  ASSERT_EQ(net.outcomes(1).size(), 1u);
  net.Reconnect(1);
  ASSERT_EQ(net.outcomes(1).size(), 2u);
  EXPECT_EQ(net.outcomes(1)[1].step, 1u);
  EXPECT_EQ(net.report_codes(1).size(), 2u);  // the ready report, repeated too
}

TEST(LumosTrimRoleTest, WithoutAGreedyResultTheJobIsRefused) {
  std::vector<TrimPeer> peers(1);
  peers[0].id = 1;
  LumosTrimRole role(0, Span<TrimPeer>(peers.data(), peers.size()));
  ASSERT_TRUE(role.Init().ok());
  std::vector<uint8_t> frame(kMaxFrame), out(4 * kMaxFrame);
  SessionOptions so;
  DeviceSession session(so, SessionBuffers{ByteSpan(frame), ByteSpan(out)});
  ASSERT_TRUE(session.AddRole(role).ok());
  ASSERT_TRUE(session.Start(1).ok());
  session.ConsumeOutput(session.PendingOutput().size());
  uint64_t seq = 0;
  auto w = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
  w.body.welcome.resume_token.size = 32;
  std::vector<uint8_t> f = ::nodefl::testing::FrameTo(w, ++seq);
  size_t consumed = 0;
  ASSERT_TRUE(session.OnReceived(ConstByteSpan(f), 2, &consumed).ok());
  auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, kJob, 1);
  e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
  uint8_t params[kTrimParametersBytes];
  ASSERT_TRUE(EncodeTrimParameters(Ready(), ByteSpan(params)).ok());
  std::memcpy(e.body.job_start.parameters.bytes, params, sizeof(params));
  e.body.job_start.parameters.size = sizeof(params);
  f = ::nodefl::testing::FrameTo(e, ++seq);
  ASSERT_TRUE(session.OnReceived(ConstByteSpan(f), 2, &consumed).ok());
  ASSERT_TRUE(session.Poll(2).ok());
  std::vector<uint32_t> codes;
  ::nodefl::testing::DrainSessionOutput(session, [&](const nodefl_wire_Envelope& m) {
    if (m.which_body == nodefl_wire_Envelope_job_report_tag) codes.push_back(m.body.job_report.code);
  });
  EXPECT_EQ(codes, (std::vector<uint32_t>{static_cast<uint32_t>(StatusCode::kFailedPrecondition)}));
  EXPECT_TRUE(role.finished());
}

TEST(LumosTrimRoleTest, GreedyOutcomesGiveTheStartingOrientation) {
  TrimPeer p;
  p.id = 5;
  // Own log-degree below the neighbour's: keep it.
  EXPECT_TRUE(ApplyGreedyOutcome(compare::PeerOutcome::kLess, 3, p));
  EXPECT_TRUE(p.keep);
  EXPECT_FALSE(p.unsettled);
  EXPECT_FALSE(ApplyGreedyOutcome(compare::PeerOutcome::kGreater, 3, p));
  EXPECT_FALSE(p.keep);
  EXPECT_TRUE(p.peer_keeps);
  // A tie: kept by both after Alg. 1, then the lower id lets it go.
  EXPECT_TRUE(ApplyGreedyOutcome(compare::PeerOutcome::kEqual, 3, p));
  EXPECT_FALSE(p.keep);
  EXPECT_TRUE(p.peer_keeps);
  EXPECT_TRUE(ApplyGreedyOutcome(compare::PeerOutcome::kEqual, 9, p));
  EXPECT_TRUE(p.keep);
  EXPECT_FALSE(p.peer_keeps);
  // An abort: keep it, know nothing about the other end.
  EXPECT_TRUE(ApplyGreedyOutcome(compare::PeerOutcome::kAborted, 3, p));
  EXPECT_TRUE(p.keep);
  EXPECT_FALSE(p.peer_keeps);
  EXPECT_TRUE(p.unsettled);
}

TEST(LumosTrimRoleTest, StorageComesFromTheArena) {
  TrimSizing sizing;
  sizing.neighbours = 40;
  Result<StoragePlan> plan = Plan(sizing);
  ASSERT_TRUE(plan.ok());
  std::vector<uint8_t> buffer(plan->ArenaBytes());
  Arena arena{ByteSpan(buffer)};
  Result<TrimArenaStorage> storage = Carve(arena, sizing);
  ASSERT_TRUE(storage.ok());
  EXPECT_EQ(storage->peers.span().size(), 40u);
  // An arena too small for the peers is refused, not overrun.
  std::vector<uint8_t> small(plan->ArenaBytes() / 2);
  Arena tight{ByteSpan(small)};
  EXPECT_FALSE(Carve(tight, sizing).ok());
}

TEST(LumosTrimRoleTest, AStepWithoutSearchesTouchesNoHeap) {
  // A device below every threshold: starting a step and reporting its
  // outcome is pure bookkeeping.
  Net net({{1}, {0}}, {{1}, {}});
  net.StartAll(1, Ready());
  const std::vector<uint8_t> frame = net.StartFrame(1, 2, Drain(1, 5));
  NODEFL_EXPECT_NO_HEAP(net.Receive(1, frame));
  EXPECT_EQ(net.role(1).step(), 1u);
}

}  // namespace
}  // namespace nodefl::lumos
