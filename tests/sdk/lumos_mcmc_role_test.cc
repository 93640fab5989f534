// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosMcmcRole (Lumos Alg. 2/3 over secure comparisons, device side)
// against a scripted server that answers key requests like the real one and
// relays sealed messages: keys, comparisons of workloads with neighbours and
// with non-neighbours (keys on demand, a first message that arrives before
// them), moves and reverts with Eq. 10 checked after every single frame, the
// value before a move, the draw of k and of the leaves (statistical, fixed
// seeds), the report, and a device without a greedy result.
#include "nodefl/lumos/mcmc_role.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "nodefl/compare/compare_sizing.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/mcmc_binding.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "scripted_key_directory.h"
#include "session_frames.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::lumos {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using ::nodefl::testing::TestIdentity;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x4d;
constexpr size_t kContexts = 4;

::nodefl::testing::LastingIdentities& Identities() {
  static auto* identities = new ::nodefl::testing::LastingIdentities(47);
  return *identities;
}

struct Graph {
  uint32_t n = 0;
  std::vector<std::vector<uint32_t>> adj;
};

Graph MakeGraph(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  Graph g;
  g.n = n;
  g.adj.resize(n);
  for (auto [a, b] : edges) {
    g.adj[a].push_back(b);
    g.adj[b].push_back(a);
  }
  for (auto& l : g.adj) std::sort(l.begin(), l.end());
  return g;
}

std::vector<uint8_t> Params(McmcPhase phase, bool upload_kept = true) {
  McmcRoundParameters p;
  p.phase = phase;
  p.upload_kept = upload_kept;
  p.width = 8;
  for (size_t i = 0; i < compare::kCompareSaltBytes; ++i) p.salt[i] = static_cast<uint8_t>(3 * i + 1);
  std::vector<uint8_t> out(kMcmcParametersBytes);
  EXPECT_TRUE(EncodeMcmcParameters(p, ByteSpan(out)).ok());
  return out;
}

class Device {
 public:
  // `keeps`: the neighbours this device keeps at the start (nullptr: unbound).
  Device(const Graph& g, uint32_t id, const std::set<uint32_t>* keeps)
      : id_(id),
        identity_(Identities().Of(id)),
        peers_(g.adj[id].size()),
        keys_(g.adj[id].size()),
        cache_(4),
        contexts_(kContexts),
        slots_(kContexts),
        tables_(kContexts, std::vector<uint8_t>(compare::PlanComparison(8).value().table_bytes())),
        role(id, Span<McmcPeer>(peers_), Span<roles::KeyedPeer>(keys_), Span<roles::KeyedPeer>(cache_),
             Span<McmcContext>(contexts_), credentials_, &crypto::DrbgRandom, &rng_),
        frame_(kMaxFrame),
        output_(8 * kMaxFrame),
        session(Options(id), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(Identities().pki().Load(identity_, &credentials_).ok());
    EXPECT_TRUE(rng_.SeedDeterministic(61, id).ok());
    for (size_t i = 0; i < peers_.size(); ++i) {
      peers_[i].id = keys_[i].id = g.adj[id][i];
      peers_[i].keep = keeps != nullptr && keeps->count(g.adj[id][i]) > 0;
    }
    for (size_t i = 0; i < kContexts; ++i) contexts_[i].Bind(Span<compare::ComparisonSlot>(&slots_[i], 1), ByteSpan(tables_[i]));
    EXPECT_TRUE(role.Init().ok());
    if (keeps != nullptr) role.Bind(static_cast<uint32_t>(keeps->size()));
    EXPECT_TRUE(session.AddRole(role).ok());
  }

  uint32_t id() const { return id_; }
  const std::vector<uint8_t>& certificate_der() const { return identity_.certificate_der; }
  bool Keeps(uint32_t v) const {
    for (const McmcPeer& p : role.peers()) {
      if (p.id == v) return p.keep;
    }
    return false;
  }

 private:
  static SessionOptions Options(uint32_t id) {
    SessionOptions o;
    o.device_id = id;
    o.ack_every = 1000;
    return o;
  }

  uint32_t id_;
  TestIdentity identity_;
  tls::TlsCredentials credentials_;
  Drbg rng_;
  std::vector<McmcPeer> peers_;
  std::vector<roles::KeyedPeer> keys_, cache_;
  std::vector<McmcContext> contexts_;
  std::vector<compare::ComparisonSlot> slots_;
  std::vector<std::vector<uint8_t>> tables_;

 public:
  LumosMcmcRole role;

 private:
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
};

struct SessionResultRecord {
  uint32_t device;
  compare::SessionResult result;
};

class Server {
 public:
  // keeps[v]: what v keeps at the start; devices in `unbound` have no greedy result.
  Server(const Graph& g, const std::vector<std::set<uint32_t>>& keeps, const std::set<uint32_t>& unbound = {})
      : g_(g) {
    directory_.rules.certificate_der = [this](uint32_t id) -> ConstByteSpan { return devices_[id]->certificate_der(); };
    directory_.rules.round = std::nullopt;  // the round of the request
    for (uint32_t v = 0; v < g.n; ++v) {
      devices_.push_back(std::make_unique<Device>(g, v, unbound.count(v) ? nullptr : &keeps[v]));
      Device& d = *devices_.back();
      EXPECT_TRUE(d.session.Start(now).ok());
      d.session.ConsumeOutput(d.session.PendingOutput().size());  // Hello
      auto w = Envelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      w.body.welcome.resume_token.size = 32;
      std::memset(w.body.welcome.resume_token.bytes, 0x33, 32);
      inbox_.emplace_back();
      seq_.push_back(0);
      EXPECT_TRUE(Feed(d, Frame(v, w)).ok());
    }
  }

  Device& operator[](uint32_t v) { return *devices_[v]; }

  static nodefl_wire_Envelope Envelope(pb_size_t tag, uint64_t job, uint32_t round) {
    return ::nodefl::testing::AddressedEnvelope(tag, job, round);
  }
  std::vector<uint8_t> Frame(uint32_t to, const nodefl_wire_Envelope& e) {
    return ::nodefl::testing::FrameTo(e, ++seq_[to]);
  }
  void JobStart(uint32_t to, uint32_t round, const std::vector<uint8_t>& params) {
    auto e = Envelope(nodefl_wire_Envelope_job_start_tag, kJob, round);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC;
    std::memcpy(e.body.job_start.parameters.bytes, params.data(), params.size());
    e.body.job_start.parameters.size = static_cast<pb_size_t>(params.size());
    inbox_[to].push_back(Frame(to, e));
  }
  void StartAll(uint32_t round, const std::vector<uint8_t>& params) {
    for (uint32_t v = 0; v < g_.n; ++v) JobStart(v, round, params);
  }
  void Data(uint32_t to, uint32_t kind, const std::vector<uint8_t>& bytes) {
    auto e = Envelope(nodefl_wire_Envelope_job_data_tag, kJob, 2);
    e.body.job_data.kind = kind;
    std::memcpy(e.body.job_data.data.bytes, bytes.data(), bytes.size());
    e.body.job_data.data.size = static_cast<pb_size_t>(bytes.size());
    inbox_[to].push_back(Frame(to, e));
  }
  // One session of one comparison between a (party A) and b.
  void StartSession(uint32_t session, uint32_t a, McmcValue va, uint32_t b, McmcValue vb, bool b_first = false) {
    auto record = [&](uint32_t peer, compare::Role role, McmcValue value) {
      McmcSessionStart s;
      s.start.session = session;
      s.start.peer = peer;
      s.start.role = role;
      s.start.count = 1;
      s.value = value;
      std::vector<uint8_t> out(kMcmcSessionStartBytes);
      EncodeMcmcSessionStart(s, out.data());
      return out;
    };
    if (b_first) {
      Data(b, kMcmcSessionStart, record(a, compare::Role::kB, vb));
      Pump();
      Data(a, kMcmcSessionStart, record(b, compare::Role::kA, va));
    } else {
      Data(a, kMcmcSessionStart, record(b, compare::Role::kA, va));
      Data(b, kMcmcSessionStart, record(a, compare::Role::kB, vb));
    }
  }
  static std::vector<uint8_t> U32(uint32_t v) {
    std::vector<uint8_t> out(4);
    StoreU32Le(v, out.data());
    return out;
  }

  Status Feed(Device& d, const std::vector<uint8_t>& frame) {
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      const Status s = d.session.OnReceived(ConstByteSpan(frame).subspan(pos), now, &consumed);
      if (!s.ok()) return s;
      pos += consumed;
      Collect(d);
    }
    CheckCoverage();
    return Status::Ok();
  }
  void Collect(Device& d) {
    ::nodefl::testing::DrainSessionOutput(d.session, [&](const nodefl_wire_Envelope& e) { Handle(d.id(), e); });
  }

  // Lumos Eq. 10 on every edge, after every frame any device took in.
  void CheckCoverage() {
    if (devices_.size() < g_.n) return;  // still constructing
    for (uint32_t a = 0; a < g_.n; ++a) {
      for (uint32_t b : g_.adj[a]) {
        if (a < b && !devices_[a]->Keeps(b) && !devices_[b]->Keeps(a)) {
          ++uncovered_moments;
        }
      }
    }
  }

  void Handle(uint32_t from, const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_job_key_tag:
        directory_.OnJobKey(from, e.body.job_key);
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_peer_key_request_tag:
        directory_.OnKeyRequest(from, e.body.peer_key_request, e.round);
        key_requests_by[from] += e.body.peer_key_request.device_ids_count;
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        ++relayed;
        relayed_sizes.insert(r.sealed.size);
        const nodefl_wire_Envelope d = directory_.Deliver(from, r, kJob, 2);
        ASSERT_LT(r.dst, g_.n);
        inbox_[r.dst].push_back(Frame(r.dst, d));
        break;
      }
      case nodefl_wire_Envelope_job_data_tag: {
        const ConstByteSpan data = protocol::BytesOf(e.body.job_data.data);
        switch (e.body.job_data.kind) {
          case kMcmcSessionResult: {
            Result<compare::SessionResult> r = compare::DecodeSessionResult(data);
            ASSERT_TRUE(r.ok());
            results.push_back({from, *r});
            break;
          }
          case kMcmcMoveDone: {
            Result<McmcMoveDone> d = DecodeMcmcMoveDone(data);
            ASSERT_TRUE(d.ok());
            move_done.push_back({from, *d});
            break;
          }
          case kMcmcKept:
            for (size_t at = 0; at + 4 <= data.size(); at += 4) kept[from].push_back(LoadU32Le(data.data() + at));
            break;
          case kMcmcSummary: {
            Result<McmcSummary> s = DecodeMcmcSummary(data);
            ASSERT_TRUE(s.ok());
            summaries[from] = *s;
            break;
          }
          default:
            ADD_FAILURE() << "unexpected JobData kind " << e.body.job_data.kind;
        }
        break;
      }
      case nodefl_wire_Envelope_job_report_tag:
        reports[{from, e.round}] = e.body.job_report;
        break;
      default:
        break;
    }
  }

  void AnswerKeyRequests() {
    directory_.Answer(kJob, [&](uint32_t to, const nodefl_wire_Envelope& c) { inbox_[to].push_back(Frame(to, c)); });
  }

  // Delivers everything queued, one frame at a time, and polls every device
  // until nothing moves.
  void Pump(int max_rounds = 10'000) {
    for (int round = 0; round < max_rounds; ++round) {
      bool moved = false;
      for (uint32_t v = 0; v < g_.n; ++v) {
        while (!inbox_[v].empty()) {
          std::vector<uint8_t> f = std::move(inbox_[v].front());
          inbox_[v].pop_front();
          EXPECT_TRUE(Feed(*devices_[v], f).ok());
          moved = true;
        }
      }
      for (uint32_t v = 0; v < g_.n; ++v) {
        Device& d = *devices_[v];
        EXPECT_TRUE(d.session.Poll(now).ok());
        if (!d.session.PendingOutput().empty()) moved = true;
        Collect(d);
        CheckCoverage();  // what a poll sent may have changed what the device keeps
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "no quiescence";
  }

  // Rounds 1 and 2 for everyone.
  void KeysAndIterate() {
    StartAll(1, Params(McmcPhase::kKeys));
    Pump();
    StartAll(2, Params(McmcPhase::kIterate));
    Pump();
  }

  const SessionResultRecord* ResultOf(uint32_t device, uint32_t session) const {
    for (const auto& r : results) {
      if (r.device == device && r.result.session == session) return &r;
    }
    return nullptr;
  }

  uint64_t now = 5'000;
  uint64_t uncovered_moments = 0;
  uint64_t relayed = 0;
  std::set<size_t> relayed_sizes;
  std::map<uint32_t, uint32_t> key_requests_by;
  std::vector<SessionResultRecord> results;
  std::vector<std::pair<uint32_t, McmcMoveDone>> move_done;
  std::map<uint32_t, std::vector<uint32_t>> kept;
  std::map<uint32_t, McmcSummary> summaries;
  std::map<std::pair<uint32_t, uint32_t>, nodefl_wire_JobReport> reports;

 private:
  const Graph& g_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::deque<std::vector<uint8_t>>> inbox_;
  std::vector<uint64_t> seq_;
  ::nodefl::testing::ScriptedKeyDirectory directory_;  // nodefl-server's key directory and relay
};

// A path 0-1-2-3-4 with 2 as a hub of two more leaves 5, 6: 2 keeps all four
// of its edges, the leaves keep nothing, 0 keeps 1, 4 keeps 3.
Graph Hub() { return MakeGraph(7, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {2, 5}, {2, 6}}); }
std::vector<std::set<uint32_t>> HubKeeps() { return {{1}, {}, {1, 3, 5, 6}, {}, {3}, {}, {}}; }

bool Greater(const compare::SessionResult& r) { return (r.bits[0] & 1u) != 0; }
bool Equal(const compare::SessionResult& r) { return (r.bits[0] & 2u) != 0; }

TEST(LumosMcmcRoleTest, KeysThenComparisonsOfWorkloadsWithNeighbours) {
  const Graph g = Hub();
  Server s(g, HubKeeps());
  s.KeysAndIterate();
  for (uint32_t v = 0; v < g.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
    EXPECT_EQ(s.key_requests_by[v], g.adj[v].size()) << v;  // each neighbour once
  }
  EXPECT_EQ(s[2].role.workload(), 4u);
  // 2 (workload 4) against 1 (0), 1 against 0 (1), 3 (0) against 4 (1).
  s.StartSession(1, 2, McmcValue::kWorkload, 1, McmcValue::kWorkload);
  s.StartSession(2, 0, McmcValue::kWorkload, 1, McmcValue::kWorkload);
  s.StartSession(3, 3, McmcValue::kWorkload, 4, McmcValue::kWorkload);
  s.StartSession(4, 5, McmcValue::kWorkload, 2, McmcValue::kWorkload);
  s.Pump();
  const struct {
    uint32_t session, a, b;
    bool greater, equal;
  } want[] = {{1, 2, 1, true, false}, {2, 0, 1, true, false}, {3, 3, 4, false, false}, {4, 5, 2, false, false}};
  for (const auto& w : want) {
    for (uint32_t party : {w.a, w.b}) {
      const SessionResultRecord* r = s.ResultOf(party, w.session);
      ASSERT_NE(r, nullptr) << "session " << w.session << " party " << party;
      ASSERT_TRUE(r->result.done) << "session " << w.session;
      EXPECT_EQ(Greater(r->result), w.greater) << "session " << w.session;
      EXPECT_EQ(Equal(r->result), w.equal) << "session " << w.session;
    }
  }
  EXPECT_EQ(s.uncovered_moments, 0u);
}

TEST(LumosMcmcRoleTest, ANonNeighbourIsKeyedOnDemandEvenWhenItsFirstMessageComesFirst) {
  const Graph g = Hub();
  Server s(g, HubKeeps());
  s.KeysAndIterate();
  // 0 (workload 1) and 4 (workload 1) are candidates of Alg. 3 and not
  // neighbours. 4 is party B and starts first; 0 is party A. Then 6 against 0
  // the other way round (0 hears of it first).
  s.StartSession(7, 0, McmcValue::kWorkload, 4, McmcValue::kWorkload, /*b_first=*/true);
  s.Pump();
  s.StartSession(8, 6, McmcValue::kWorkload, 0, McmcValue::kWorkload, /*b_first=*/true);
  s.Pump();
  for (uint32_t party : {0u, 4u}) {
    const SessionResultRecord* r = s.ResultOf(party, 7);
    ASSERT_NE(r, nullptr) << party;
    ASSERT_TRUE(r->result.done) << party;
    EXPECT_TRUE(Equal(r->result));
    EXPECT_FALSE(Greater(r->result));
  }
  for (uint32_t party : {6u, 0u}) {
    const SessionResultRecord* r = s.ResultOf(party, 8);
    ASSERT_NE(r, nullptr) << party;
    ASSERT_TRUE(r->result.done) << party;
    EXPECT_FALSE(Greater(r->result));  // 0 < 1
    EXPECT_FALSE(Equal(r->result));
  }
  EXPECT_EQ(s.key_requests_by[0], g.adj[0].size() + 2);  // 4 and 6 on demand
  EXPECT_EQ(s.key_requests_by[4], g.adj[4].size() + 1);
  EXPECT_EQ(s[0].role.stats().rejected, 0u);
  EXPECT_EQ(s[4].role.stats().rejected, 0u);
}

TEST(LumosMcmcRoleTest, AMoveKeepsEveryEdgeCoveredAndARevertRestoresTheStartExactly) {
  const Graph g = Hub();
  Server s(g, HubKeeps());
  s.KeysAndIterate();
  std::vector<std::vector<bool>> before(g.n);
  for (uint32_t v = 0; v < g.n; ++v) {
    for (uint32_t u : g.adj[v]) before[v].push_back(s[v].Keeps(u));
  }
  s.Data(2, kMcmcMove, Server::U32(1));
  s.Pump();
  ASSERT_EQ(s.move_done.size(), 1u);
  EXPECT_EQ(s.move_done[0].first, 2u);
  const McmcMoveDone moved = s.move_done[0].second;
  EXPECT_EQ(moved.iteration, 1u);
  EXPECT_FALSE(moved.reverted);
  // n = 4 kept leaves: k uniform in 1..round(ln 4) = 1.
  EXPECT_EQ(moved.moved, 1u);
  EXPECT_EQ(s[2].role.workload(), 3u);
  EXPECT_EQ(s[2].role.workload_before_move(), 4u);
  uint32_t gained = 0;
  for (uint32_t u : g.adj[2]) {
    if (!s[2].Keeps(u)) {
      EXPECT_TRUE(s[u].Keeps(2)) << u;
      ++gained;
    }
  }
  EXPECT_EQ(gained, 1u);
  // Alg. 2 line 7's f(X_t): the value before the move (4), against 1
  // (which keeps at most 1 now); and 2's workload now (3) against 3's.
  s.StartSession(9, 1, McmcValue::kWorkload, 2, McmcValue::kBeforeMove);
  s.StartSession(10, 3, McmcValue::kWorkload, 2, McmcValue::kWorkload);
  s.Pump();
  const SessionResultRecord* r9 = s.ResultOf(1, 9);
  ASSERT_TRUE(r9 != nullptr && r9->result.done);
  EXPECT_FALSE(Greater(r9->result));
  EXPECT_FALSE(Equal(r9->result));
  const SessionResultRecord* r10 = s.ResultOf(3, 10);
  ASSERT_TRUE(r10 != nullptr && r10->result.done);
  EXPECT_FALSE(Greater(r10->result));  // 3 keeps at most 1 < 3
  // Eq. 18 says no: every edge back as it was.
  s.Data(2, kMcmcRevert, Server::U32(1));
  s.Pump();
  ASSERT_EQ(s.move_done.size(), 2u);
  EXPECT_TRUE(s.move_done[1].second.reverted);
  EXPECT_EQ(s.move_done[1].second.moved, 1u);
  for (uint32_t v = 0; v < g.n; ++v) {
    for (size_t i = 0; i < g.adj[v].size(); ++i) EXPECT_EQ(s[v].Keeps(g.adj[v][i]), before[v][i]) << v;
  }
  // A revert of a move this device did not make changes nothing.
  s.Data(0, kMcmcRevert, Server::U32(1));
  s.Pump();
  EXPECT_EQ(s.move_done.size(), 2u);
  EXPECT_EQ(s.uncovered_moments, 0u);
}

TEST(LumosMcmcRoleTest, AMoveOfAnEdgeBothKeepDropsItHereOnlyAndARevertKeepsBoth) {
  // An Alg. 1 tie: both ends keep 0-1.
  const Graph g = MakeGraph(2, {{0, 1}});
  Server s(g, {{1}, {0}});
  s.KeysAndIterate();
  s.Data(0, kMcmcMove, Server::U32(5));
  s.Pump();
  ASSERT_EQ(s.move_done.size(), 1u);
  EXPECT_EQ(s.move_done[0].second.moved, 1u);
  EXPECT_FALSE(s[0].Keeps(1));
  EXPECT_TRUE(s[1].Keeps(0));
  s.Data(0, kMcmcRevert, Server::U32(5));
  s.Pump();
  EXPECT_TRUE(s[0].Keeps(1));
  EXPECT_TRUE(s[1].Keeps(0));  // it kept it before the kGive
  EXPECT_EQ(s.uncovered_moments, 0u);
}

TEST(LumosMcmcRoleTest, ADeviceThatKeepsNothingAnswersAMoveAtOnceWithoutAMessage) {
  const Graph g = Hub();
  Server s(g, HubKeeps());
  s.KeysAndIterate();
  s.Data(5, kMcmcMove, Server::U32(3));
  s.Pump();
  ASSERT_EQ(s.move_done.size(), 1u);
  EXPECT_EQ(s.move_done[0].second.moved, 0u);
  const size_t before = s.relayed;
  s.Data(6, kMcmcMove, Server::U32(4));
  s.Pump();
  EXPECT_EQ(s.relayed, before);
}

// Alg. 2 lines 3-4 on a star whose centre keeps 20 leaves: k uniform in
// 1..round(ln 20) = 1..3, the leaves uniform. 240 move + revert rounds.
TEST(LumosMcmcRoleTest, TheNumberOfLeavesAndTheLeavesMovedAreUniform) {
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t leaf = 1; leaf <= 20; ++leaf) edges.push_back({0, leaf});
  const Graph g = MakeGraph(21, edges);
  std::vector<std::set<uint32_t>> keeps(21);
  for (uint32_t leaf = 1; leaf <= 20; ++leaf) keeps[0].insert(leaf);
  Server s(g, keeps);
  s.KeysAndIterate();
  constexpr uint32_t kRounds = 240;
  std::map<uint32_t, uint32_t> by_k;
  std::vector<uint32_t> by_leaf(21, 0);
  for (uint32_t it = 1; it <= kRounds; ++it) {
    s.Data(0, kMcmcMove, Server::U32(it));
    s.Pump();
    ASSERT_FALSE(s.move_done.empty());
    const McmcMoveDone d = s.move_done.back().second;
    ASSERT_EQ(d.iteration, it);
    ++by_k[d.moved];
    for (uint32_t leaf = 1; leaf <= 20; ++leaf) by_leaf[leaf] += s[0].Keeps(leaf) ? 0 : 1;
    s.Data(0, kMcmcRevert, Server::U32(it));
    s.Pump();
    ASSERT_TRUE(s.move_done.back().second.reverted);
    ASSERT_EQ(s[0].role.workload(), 20u);
  }
  // k: chi-square against 1/3 each, 2 degrees of freedom; 13.8 is p = 0.001.
  double chi = 0;
  for (uint32_t k = 1; k <= 3; ++k) {
    const double e = kRounds / 3.0;
    chi += (by_k[k] - e) * (by_k[k] - e) / e;
  }
  EXPECT_EQ(by_k[1] + by_k[2] + by_k[3], kRounds);
  EXPECT_LT(chi, 13.8) << by_k[1] << " " << by_k[2] << " " << by_k[3];
  // Leaves: each picked with probability E[k] / 20 = 0.1 per round, 480
  // picks in all; chi-square with 19 degrees of freedom, 43.8 is p = 0.001.
  uint32_t picks = 0;
  for (uint32_t leaf = 1; leaf <= 20; ++leaf) picks += by_leaf[leaf];
  EXPECT_EQ(picks, by_k[1] + 2 * by_k[2] + 3 * by_k[3]);
  double chi_leaves = 0;
  for (uint32_t leaf = 1; leaf <= 20; ++leaf) {
    const double e = picks / 20.0;
    chi_leaves += (by_leaf[leaf] - e) * (by_leaf[leaf] - e) / e;
  }
  EXPECT_LT(chi_leaves, 43.8);
  EXPECT_EQ(s.uncovered_moments, 0u);
}

TEST(LumosMcmcRoleTest, TheReportListsTheKeptNeighboursAndTheSummary) {
  const Graph g = Hub();
  Server s(g, HubKeeps());
  s.KeysAndIterate();
  s.Data(2, kMcmcMove, Server::U32(1));
  s.Pump();
  s.StartAll(3, Params(McmcPhase::kReport));
  s.Pump();
  for (uint32_t v = 0; v < g.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 3}), 1u) << v;
    ASSERT_EQ(s.summaries.count(v), 1u) << v;
    std::vector<uint32_t> want;
    for (uint32_t u : g.adj[v]) {
      if (s[v].Keeps(u)) want.push_back(u);
    }
    EXPECT_EQ(s.kept[v], want) << v;
    EXPECT_EQ(s.summaries[v].workload, want.size());
    EXPECT_EQ(s.summaries[v].greedy_workload, HubKeeps()[v].size());
    EXPECT_EQ(s.summaries[v].uncovered, 0u);
    EXPECT_TRUE(s[v].role.finished());
  }
  EXPECT_EQ(s.summaries[2].moves, 1u);
  EXPECT_EQ(s.summaries[2].workload, 3u);
}

TEST(LumosMcmcRoleTest, ADeviceWithoutAGreedyResultRefusesAndAsksForNoKeys) {
  const Graph g = Hub();
  Server s(g, HubKeeps(), /*unbound=*/{5});
  s.StartAll(1, Params(McmcPhase::kKeys));
  s.Pump();
  ASSERT_EQ(s.reports.count({5, 1}), 1u);
  EXPECT_EQ(s.reports.at({5, 1}).code, static_cast<uint32_t>(StatusCode::kFailedPrecondition));
  EXPECT_EQ(s.key_requests_by[5], 0u);
  EXPECT_TRUE(s[5].role.finished());
  EXPECT_EQ(s.reports.at({2, 1}).code, 0u);
}

TEST(LumosMcmcRoleTest, GreedyKeepsAllButTheHigherLogDegree) {
  EXPECT_TRUE(GreedyKeeps(compare::PeerOutcome::kLess));
  EXPECT_TRUE(GreedyKeeps(compare::PeerOutcome::kEqual));    // Alg. 1: both keep a tie
  EXPECT_TRUE(GreedyKeeps(compare::PeerOutcome::kAborted));  // nothing learnt: keep
  EXPECT_FALSE(GreedyKeeps(compare::PeerOutcome::kGreater));
}

TEST(LumosMcmcFormatTest, RecordsRoundTripAndBadOnesAreRefused) {
  McmcRoundParameters p;
  p.phase = McmcPhase::kReport;
  p.upload_kept = true;
  p.width = 12;
  p.max_sessions = 3;
  p.salt[5] = 9;
  std::vector<uint8_t> b(kMcmcParametersBytes);
  ASSERT_TRUE(EncodeMcmcParameters(p, ByteSpan(b)).ok());
  Result<McmcRoundParameters> q = DecodeMcmcParameters(b);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->phase, McmcPhase::kReport);
  EXPECT_TRUE(q->upload_kept);
  EXPECT_EQ(q->width, 12);
  EXPECT_EQ(q->max_sessions, 3);
  EXPECT_EQ(q->salt[5], 9);
  b[1] = 4;
  EXPECT_FALSE(DecodeMcmcParameters(b).ok());
  b[1] = 3;
  b[0] = 2;
  EXPECT_FALSE(DecodeMcmcParameters(b).ok());
  b[0] = kMcmcVersion;
  b[3 + compare::kCompareSaltBytes] = 33;  // width
  EXPECT_FALSE(DecodeMcmcParameters(b).ok());

  McmcLeafMessage m{McmcLeafKind::kReturn, 77};
  uint8_t leaf[kMcmcLeafMessageBytes];
  ASSERT_TRUE(EncodeMcmcLeafMessage(m, ByteSpan(leaf)).ok());
  Result<McmcLeafMessage> back = DecodeMcmcLeafMessage(ConstByteSpan(leaf));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kind, McmcLeafKind::kReturn);
  EXPECT_EQ(back->iteration, 77u);
  leaf[2] = 5;
  EXPECT_FALSE(DecodeMcmcLeafMessage(ConstByteSpan(leaf)).ok());
  EXPECT_FALSE(EncodeMcmcLeafMessage(McmcLeafMessage{McmcLeafKind::kGive, 0}, ByteSpan(leaf)).ok());

  McmcMoveDone d{9, true, 3};
  uint8_t done[kMcmcMoveDoneBytes];
  ASSERT_TRUE(EncodeMcmcMoveDone(d, ByteSpan(done)).ok());
  Result<McmcMoveDone> dd = DecodeMcmcMoveDone(ConstByteSpan(done));
  ASSERT_TRUE(dd.ok());
  EXPECT_TRUE(dd->reverted);
  EXPECT_EQ(dd->moved, 3u);
  done[4] = 2;
  EXPECT_FALSE(DecodeMcmcMoveDone(ConstByteSpan(done)).ok());

  McmcSessionStart st;
  st.start.session = 4;
  st.start.peer = 8;
  st.start.role = compare::Role::kB;
  st.value = McmcValue::kBeforeMove;
  uint8_t sb[kMcmcSessionStartBytes];
  EncodeMcmcSessionStart(st, sb);
  Result<McmcSessionStart> sd = DecodeMcmcSessionStart(ConstByteSpan(sb));
  ASSERT_TRUE(sd.ok());
  EXPECT_EQ(sd->value, McmcValue::kBeforeMove);
  EXPECT_EQ(sd->start.peer, 8u);
  sb[kMcmcSessionStartBytes - 1] = 2;
  EXPECT_FALSE(DecodeMcmcSessionStart(ConstByteSpan(sb)).ok());

  McmcSummary sum;
  sum.workload = 5;
  sum.key_failures = 2;
  uint8_t sbytes[kMcmcSummaryBytes];
  ASSERT_TRUE(EncodeMcmcSummary(sum, ByteSpan(sbytes)).ok());
  Result<McmcSummary> sback = DecodeMcmcSummary(ConstByteSpan(sbytes));
  ASSERT_TRUE(sback.ok());
  EXPECT_EQ(sback->workload, 5u);
  EXPECT_EQ(sback->key_failures, 2u);
}

}  // namespace
}  // namespace nodefl::lumos
