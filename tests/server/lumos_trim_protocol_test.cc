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

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "nodefl/device/device_session.h"
#include "nodefl/lumos/trim_binding.h"
#include "nodefl/lumos/trim_role.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/seal/seal.h"
#include "nodefl/server/jobs/lumos_trim_job.h"
#include "nodefl/server/lumos/trimming/trimming.h"
#include "session_frames.h"

namespace nodefl::lumos {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
namespace jobs = server::jobs;
namespace ref = server::lumos;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x51;
constexpr uint32_t kStepDeadlineMs = 5'000;

struct Graph {
  uint32_t n = 0;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // a < b
  std::vector<std::vector<uint32_t>> adj;            // sorted
};

Graph MakeGraph(uint32_t n, std::vector<std::pair<uint32_t, uint32_t>> edges) {
  Graph g;
  g.n = n;
  g.adj.resize(n);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (auto [a, b] : edges) {
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    if (!seen.insert({a, b}).second) continue;
    g.edges.push_back({a, b});
    g.adj[a].push_back(b);
    g.adj[b].push_back(a);
  }
  for (auto& l : g.adj) std::sort(l.begin(), l.end());
  return g;
}

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

// Direction keys both ends derive the same way (the real ones come from the
// secure-compare job's key exchange, which this test does not need).
seal::PairKeys KeysFor(uint32_t a, uint32_t b) {
  const uint32_t low = std::min(a, b), high = std::max(a, b);
  uint8_t okm[2 * seal::kSealKeyBytes];
  for (size_t i = 0; i < sizeof(okm); ++i) okm[i] = static_cast<uint8_t>(low * 131 + high * 17 + i * 7 + 1);
  seal::PairKeys k;
  k.Assign(low, high, okm);
  return k;
}

struct Options {
  uint64_t seed = 1;
  double aborted = 0;          // fraction of comparisons that aborted on one side
  bool relays_first = false;   // relayed messages overtake the server's (JobStarts)
  uint32_t kill_at_step = 0;   // a device goes away during this drain step (0: none)
  bool upload_kept = true;
};

class Fleet {
 public:
  Fleet(const Graph& g, const Options& o)
      : g_(g), o_(o), rng_(o.seed), job_(JobOptions(o), Ids(g.n), g.edges) {
    std::bernoulli_distribution abort(o.aborted);
    for (uint32_t v = 0; v < g.n; ++v) {
      auto d = std::make_unique<Dev>();
      d->id = v;
      d->peers.resize(g.adj[v].size());
      uint32_t greedy = 0;
      for (size_t i = 0; i < g.adj[v].size(); ++i) {
        const uint32_t u = g.adj[v][i];
        TrimPeer& p = d->peers[i];
        p.id = u;
        p.keys = KeysFor(v, u);
        p.keyed = true;
        // Lumos Alg. 1 by log-degree, as both ends of the comparison see it.
        const uint32_t lv = ref::LogDegree(static_cast<uint32_t>(g.adj[v].size()));
        const uint32_t lu = ref::LogDegree(static_cast<uint32_t>(g.adj[u].size()));
        compare::PeerOutcome outcome = lv > lu    ? compare::PeerOutcome::kGreater
                                       : lv == lu ? compare::PeerOutcome::kEqual
                                                  : compare::PeerOutcome::kLess;
        if (abort(rng_)) outcome = compare::PeerOutcome::kAborted;
        if (ApplyGreedyOutcome(outcome, v, p)) ++greedy;
      }
      d->role = std::make_unique<LumosTrimRole>(v, Span<TrimPeer>(d->peers.data(), d->peers.size()));
      EXPECT_TRUE(d->role->Init().ok());
      d->role->Bind(greedy);
      d->frame.resize(kMaxFrame);
      d->out.resize(8 * kMaxFrame);
      SessionOptions so;
      so.device_id = v;
      so.ack_every = 1000;
      d->session = std::make_unique<DeviceSession>(so, SessionBuffers{ByteSpan(d->frame), ByteSpan(d->out)});
      EXPECT_TRUE(d->session->AddRole(*d->role).ok());
      EXPECT_TRUE(d->session->Start(now_).ok());
      d->session->ConsumeOutput(d->session->PendingOutput().size());  // Hello
      auto w = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      w.body.welcome.resume_token.size = 32;
      std::memset(w.body.welcome.resume_token.bytes, 0x33, 32);
      Feed(*d, ::nodefl::testing::FrameTo(w, ++d->seq));
      devs_.push_back(std::move(d));
    }
    CheckCoverage();
  }

  // Runs the job to its end; false if it did not finish within the budget.
  bool Run(uint64_t max_events = 5'000'000) {
    Dispatch(job_.Begin(now_));
    uint64_t events = 0;
    while (!job_.finished() && events++ < max_events) {
      if (o_.kill_at_step != 0 && killed_ == nullptr && job_.summary().steps.size() + 1 >= o_.kill_at_step &&
          relays_in_flight() > 0) {
        KillBusiestDevice();
      }
      if (!DeliverOne()) {
        // Quiet: only a deadline can move the job on.
        now_ += uint64_t{kStepDeadlineMs} * 1000 + 1;
        Dispatch(job_.Poll(now_));
        continue;
      }
      now_ += 10;
      Dispatch(job_.Poll(now_));
    }
    return job_.finished();
  }

  const jobs::LumosTrimJob& job() const { return job_; }
  const LumosTrimRole& role(uint32_t v) const { return *devs_[v]->role; }
  uint32_t killed() const { return killed_ ? killed_->id : UINT32_MAX; }
  uint64_t coverage_checks() const { return coverage_checks_; }
  uint32_t MaxWorkload() const {
    uint32_t m = 0;
    for (const auto& d : devs_) m = std::max(m, d->role->workload());
    return m;
  }
  uint64_t KeptTwice() const {
    uint64_t n = 0;
    for (const auto& [a, b] : g_.edges) n += (Keeps(a, b) && Keeps(b, a)) ? 1 : 0;
    return n;
  }

  // Eq. 10 over the devices' own state.
  void CheckCoverage() {
    ++coverage_checks_;
    for (const auto& [a, b] : g_.edges) {
      if (!Keeps(a, b) && !Keeps(b, a)) {
        ADD_FAILURE() << "edge " << a << "-" << b << " kept by nobody";
        return;
      }
    }
  }

 private:
  struct Dev {
    uint32_t id = 0;
    std::vector<TrimPeer> peers;
    std::unique_ptr<LumosTrimRole> role;
    std::vector<uint8_t> frame, out;
    std::unique_ptr<DeviceSession> session;
    // From the server, in order; framed (with the connection's next
    // sequence number) when delivered.
    std::deque<nodefl_wire_Envelope> inbox;
    uint64_t seq = 0;
    uint64_t relay_id = 0;
    bool alive = true;
  };

  static jobs::LumosTrimOptions JobOptions(const Options& o) {
    jobs::LumosTrimOptions j;
    j.job_id = kJob;
    j.round_deadline_ms = kStepDeadlineMs;
    j.step_deadline_ms = kStepDeadlineMs;
    j.upload_kept = o.upload_kept;
    return j;
  }
  static std::vector<uint32_t> Ids(uint32_t n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }

  bool Keeps(uint32_t a, uint32_t b) const {
    for (const TrimPeer& p : devs_[a]->peers) {
      if (p.id == b) return p.keep;
    }
    return false;
  }

  size_t relays_in_flight() const {
    size_t n = 0;
    for (const auto& [k, q] : relay_) n += q.size();
    return n;
  }

  void KillBusiestDevice() {
    // The device most messages wait for: a root or relay in the middle of
    // its search, so its neighbours wait on it.
    std::map<uint32_t, size_t> waiting;
    for (const auto& [k, q] : relay_) waiting[k.second] += q.size();
    uint32_t victim = waiting.begin()->first;
    for (const auto& [id, n] : waiting) {
      if (n > waiting[victim]) victim = id;
    }
    killed_ = devs_[victim].get();
    killed_->alive = false;
    killed_->inbox.clear();
    for (auto& [k, q] : relay_) {
      if (k.second == victim) q.clear();
    }
  }

  void Feed(Dev& d, const std::vector<uint8_t>& frame) {
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      const Status s = d.session->OnReceived(ConstByteSpan(frame).subspan(pos), now_, &consumed);
      ASSERT_TRUE(s.ok()) << s.str();
      pos += consumed;
      Collect(d);
    }
    EXPECT_TRUE(d.session->Poll(now_).ok());
    Collect(d);
  }

  void Collect(Dev& d) {
    ::nodefl::testing::DrainSessionOutput(*d.session, [&](const nodefl_wire_Envelope& e) { Handle(d, e); });
  }

  void Handle(Dev& d, const nodefl_wire_Envelope& e) {
    if (!d.alive) return;
    switch (e.which_body) {
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        EXPECT_EQ(e.job_id, kJob);
        // One size for every trimming message: the relay learns nothing
        // from sizes.
        EXPECT_EQ(r.sealed.size, kTrimMessageBytes + seal::kSealOverheadBytes);
        if (devs_[r.dst]->alive) relay_[{d.id, r.dst}].emplace_back(r.sealed.bytes, r.sealed.bytes + r.sealed.size);
        break;
      }
      case nodefl_wire_Envelope_job_data_tag:
        pending_[d.id].push_back([this, id = d.id, round = e.round, kind = e.body.job_data.kind,
                            bytes = std::vector<uint8_t>(e.body.job_data.data.bytes,
                                                         e.body.job_data.data.bytes + e.body.job_data.data.size)] {
          Dispatch(job_.OnUpload(id, round, kind, bytes, now_));
        });
        break;
      case nodefl_wire_Envelope_job_report_tag:
        pending_[d.id].push_back([this, id = d.id, round = e.round, report = e.body.job_report] {
          Dispatch(job_.OnReport(id, round, report, now_));
        });
        break;
      default:
        break;
    }
  }

  void Dispatch(std::vector<jobs::RoundStart> starts) {
    for (const jobs::RoundStart& s : starts) {
      for (uint32_t v : s.devices) {
        Dev& d = *devs_[v];
        if (!d.alive) {
          job_.OnUndeliverable(v, now_);
          continue;
        }
        auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, kJob, s.round);
        e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
        e.body.job_start.deadline_ms = s.deadline_ms;
        std::memcpy(e.body.job_start.parameters.bytes, s.parameters.data(), s.parameters.size());
        e.body.job_start.parameters.size = static_cast<pb_size_t>(s.parameters.size());
        d.inbox.push_back(e);
      }
    }
    for (jobs::DeviceData& data : job_.TakeData()) {
      Dev& d = *devs_[data.device];
      if (!d.alive) {
        job_.OnUndeliverable(data.device, now_);
        continue;
      }
      auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_data_tag, kJob, data.round);
      e.body.job_data.kind = data.kind;
      std::memcpy(e.body.job_data.data.bytes, data.bytes.data(), data.bytes.size());
      e.body.job_data.data.size = static_cast<pb_size_t>(data.bytes.size());
      d.inbox.push_back(e);
    }
  }

  // One message, chosen at random among everything deliverable: a device's
  // next frame from the server, the next relayed message of one (sender,
  // receiver) pair, or the server reading one device's record.
  bool DeliverOne() {
    std::vector<int> kinds;
    std::vector<Dev*> with_inbox;
    for (auto& d : devs_) {
      if (d->alive && !d->inbox.empty()) with_inbox.push_back(d.get());
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (const auto& [k, q] : relay_) {
      if (!q.empty()) pairs.push_back(k);
    }
    if (!with_inbox.empty()) kinds.push_back(0);
    if (!pairs.empty()) kinds.push_back(1);
    std::vector<uint32_t> uploading;
    for (const auto& [id, q] : pending_) {
      if (!q.empty()) uploading.push_back(id);
    }
    if (!uploading.empty()) kinds.push_back(2);
    if (kinds.empty()) return false;
    int kind = kinds[rng_() % kinds.size()];
    if (o_.relays_first && !pairs.empty()) kind = 1;
    if (kind == 0) {
      Dev& d = *with_inbox[rng_() % with_inbox.size()];
      const nodefl_wire_Envelope e = d.inbox.front();
      d.inbox.pop_front();
      Feed(d, ::nodefl::testing::FrameTo(e, ++d.seq));
    } else if (kind == 1) {
      const auto k = pairs[rng_() % pairs.size()];
      std::vector<uint8_t> sealed = std::move(relay_[k].front());
      relay_[k].pop_front();
      Dev& d = *devs_[k.second];
      auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_relay_deliver_tag, kJob, 0);
      e.body.relay_deliver.src = k.first;
      e.body.relay_deliver.relay_id = ++d.relay_id;
      std::memcpy(e.body.relay_deliver.sealed.bytes, sealed.data(), sealed.size());
      e.body.relay_deliver.sealed.size = static_cast<pb_size_t>(sealed.size());
      Feed(d, ::nodefl::testing::FrameTo(e, ++d.seq));
    } else {
      // The server reads each connection in order.
      auto& q = pending_[uploading[rng_() % uploading.size()]];
      auto f = std::move(q.front());
      q.pop_front();
      f();
    }
    CheckCoverage();
    return true;
  }

  const Graph g_;
  Options o_;
  std::mt19937_64 rng_;
  uint64_t now_ = 1'000'000;
  jobs::LumosTrimJob job_;
  std::vector<std::unique_ptr<Dev>> devs_;
  std::map<std::pair<uint32_t, uint32_t>, std::deque<std::vector<uint8_t>>> relay_;
  std::map<uint32_t, std::deque<std::function<void()>>> pending_;  // device -> server, per connection
  Dev* killed_ = nullptr;
  uint64_t coverage_checks_ = 0;
};

void ExpectOptimal(const Graph& g, const Options& o) {
  Fleet fleet(g, o);
  ASSERT_TRUE(fleet.Run());
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
  const jobs::LumosTrimSummary& s = fleet.job().summary();
  EXPECT_TRUE(fleet.job().succeeded());
  EXPECT_TRUE(s.trees_path.empty());
  EXPECT_EQ(fleet.MaxWorkload(), Optimum(HubGraph(40, 3, 9)));
}

TEST(LumosTrimProtocolTest, AbortedComparisonsKeepEdgesCoveredAndAreNotCertified) {
  const Graph g = HubGraph(50, 3, 5);
  Fleet fleet(g, {.seed = 5, .aborted = 0.2});
  ASSERT_TRUE(fleet.Run());
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
      const Graph g = HubGraph(150, 4, seed);
      Fleet fleet(g, {.seed = seed, .kill_at_step = step});
      ASSERT_TRUE(fleet.Run());  // deadlines, not a hang
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
