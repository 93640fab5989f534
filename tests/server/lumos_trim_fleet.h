// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-trim job in one process, without TLS: the server's LumosTrimJob
// against real DeviceSessions running LumosTrimRole, joined by a fake
// network that delivers every message in a random order while keeping the
// order of each connection (server to device, device to server, and each
// relayed (sender, receiver) pair), as TCP and the relay do. After every
// delivery it checks Lumos Eq. 10 on the edges of the device that received
// it (the only device whose state changed), so every edge is checked at
// every moment it could break.
//
// Used by the protocol test (lumos_trim_protocol_test.cc) and by
// nodefl-lumos-trim-fleet, which runs whole datasets this way. Problems are
// collected as text (errors()), not asserted, so that both can use it.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lumos_test_keys.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/trim_binding.h"
#include "nodefl/lumos/trim_role.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/seal/seal.h"
#include "nodefl/server/jobs/lumos_trim_job.h"
#include "nodefl/server/lumos/trimming/trimming.h"

namespace nodefl::lumos::fleet {

struct Graph {
  uint32_t n = 0;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // a < b
  std::vector<std::vector<uint32_t>> adj;            // sorted
};

inline Graph MakeGraph(uint32_t n, std::vector<std::pair<uint32_t, uint32_t>> edges) {
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

using testing::KeysFor;

struct FleetOptions {
  uint64_t seed = 1;
  double aborted = 0;          // fraction of comparisons that aborted on one side
  bool relays_first = false;   // relayed messages overtake the server's (JobStarts)
  uint32_t kill_at_step = 0;   // a device goes away during this drain step (0: none)
  bool upload_kept = true;
  uint32_t step_deadline_ms = 5'000;
};

// Keys with O(1) insert, erase and uniform pick.
template <typename K>
class RandomBag {
 public:
  void Insert(const K& k) {
    if (index_.count(k) != 0) return;
    index_[k] = items_.size();
    items_.push_back(k);
  }
  void Erase(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return;
    const size_t i = it->second;
    index_.erase(it);
    if (i + 1 != items_.size()) {
      items_[i] = items_.back();
      index_[items_[i]] = i;
    }
    items_.pop_back();
  }
  bool empty() const { return items_.empty(); }
  template <typename Rng>
  const K& Pick(Rng& rng) const {
    return items_[rng() % items_.size()];
  }

 private:
  struct Hash {
    size_t operator()(const K& k) const { return std::hash<uint64_t>()(Key(k)); }
    static uint64_t Key(uint32_t v) { return v; }
    static uint64_t Key(const std::pair<uint32_t, uint32_t>& p) { return (uint64_t{p.first} << 32) | p.second; }
  };
  std::vector<K> items_;
  std::unordered_map<K, size_t, Hash> index_;
};

class Fleet {
 public:
  static constexpr uint64_t kJob = 0x51;

  Fleet(const Graph& g, const FleetOptions& o) : g_(g), o_(o), rng_(o.seed), job_(JobOptions(o), Ids(g.n), g.edges) {
    std::bernoulli_distribution abort(o.aborted);
    for (uint32_t v = 0; v < g.n; ++v) {
      auto d = std::make_unique<Dev>();
      d->id = v;
      d->peers.resize(g.adj[v].size());
      uint32_t greedy = 0;
      const uint32_t lv = server::lumos::LogDegree(static_cast<uint32_t>(g.adj[v].size()));
      for (size_t i = 0; i < g.adj[v].size(); ++i) {
        const uint32_t u = g.adj[v][i];
        TrimPeer& p = d->peers[i];
        p.id = u;
        p.keys = KeysFor(v, u);
        p.keyed = true;
        // Lumos Alg. 1 by log-degree, as both ends of the comparison see it.
        const uint32_t lu = server::lumos::LogDegree(static_cast<uint32_t>(g.adj[u].size()));
        compare::PeerOutcome outcome = lv > lu    ? compare::PeerOutcome::kGreater
                                       : lv == lu ? compare::PeerOutcome::kEqual
                                                  : compare::PeerOutcome::kLess;
        if (abort(rng_)) outcome = compare::PeerOutcome::kAborted;
        if (ApplyGreedyOutcome(outcome, v, p)) ++greedy;
      }
      d->role = std::make_unique<LumosTrimRole>(v, Span<TrimPeer>(d->peers.data(), d->peers.size()));
      if (!d->role->Init().ok()) Error("role " + std::to_string(v) + ": Init failed");
      d->role->Bind(greedy);
      d->frame.resize(kMaxFrame);
      d->out.resize(8 * kMaxFrame);
      device::SessionOptions so;
      so.device_id = v;
      so.ack_every = 1000;
      d->session = std::make_unique<device::DeviceSession>(
          so, device::SessionBuffers{ByteSpan(d->frame), ByteSpan(d->out)});
      if (!d->session->AddRole(*d->role).ok() || !d->session->Start(now_).ok()) Error("session start failed");
      d->session->ConsumeOutput(d->session->PendingOutput().size());  // Hello
      nodefl_wire_Envelope w = Envelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      w.body.welcome.resume_token.size = 32;
      std::memset(w.body.welcome.resume_token.bytes, 0x33, 32);
      devs_.push_back(std::move(d));
      Feed(*devs_.back(), w);
    }
    for (uint32_t v = 0; v < g.n; ++v) CheckCoverage(v);
  }

  // Runs the job to its end; false if it did not finish within the budget.
  bool Run(uint64_t max_events = 2'000'000'000) {
    Dispatch(job_.Begin(now_));
    uint64_t events = 0;
    while (!job_.finished() && events++ < max_events) {
      if (o_.kill_at_step != 0 && killed_ == nullptr && job_.summary().steps.size() + 1 >= o_.kill_at_step &&
          !relay_ready_.empty()) {
        KillBusiestDevice();
      }
      if (!DeliverOne()) {
        // Quiet: only a deadline can move the job on.
        now_ += uint64_t{o_.step_deadline_ms} * 1000 + 1;
        Dispatch(job_.Poll(now_));
        continue;
      }
      // The fake network takes no time: the clock moves only when it is
      // quiet (above), so a step's deadline never passes while messages
      // are still being delivered, however many a step has.
      if (events % 64 == 0) Dispatch(job_.Poll(now_));
    }
    return job_.finished();
  }

  const server::jobs::LumosTrimJob& job() const { return job_; }
  const LumosTrimRole& role(uint32_t v) const { return *devs_[v]->role; }
  uint32_t killed() const { return killed_ ? killed_->id : UINT32_MAX; }
  uint64_t coverage_checks() const { return coverage_checks_; }
  uint64_t relayed() const { return relayed_; }
  const std::vector<std::string>& errors() const { return errors_; }
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
  // Eq. 10 on every edge.
  uint64_t Uncovered() const {
    uint64_t n = 0;
    for (const auto& [a, b] : g_.edges) n += (!Keeps(a, b) && !Keeps(b, a)) ? 1 : 0;
    return n;
  }

 private:
  static constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

  struct Dev {
    uint32_t id = 0;
    std::vector<TrimPeer> peers;
    std::unique_ptr<LumosTrimRole> role;
    std::vector<uint8_t> frame, out;
    std::unique_ptr<device::DeviceSession> session;
    // From the server, in order; framed (with the connection's next
    // sequence number) when delivered.
    std::deque<nodefl_wire_Envelope> inbox;
    std::deque<std::function<void()>> uploads;  // to the server, in order
    uint64_t seq = 0;
    uint64_t relay_id = 0;
    bool alive = true;
  };

  static server::jobs::LumosTrimOptions JobOptions(const FleetOptions& o) {
    server::jobs::LumosTrimOptions j;
    j.job_id = kJob;
    j.round_deadline_ms = o.step_deadline_ms;
    j.step_deadline_ms = o.step_deadline_ms;
    j.upload_kept = o.upload_kept;
    return j;
  }
  static std::vector<uint32_t> Ids(uint32_t n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }
  static nodefl_wire_Envelope Envelope(pb_size_t tag, uint64_t job, uint32_t round) {
    nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
    e.which_body = tag;
    e.job_id = job;
    e.round = round;
    return e;
  }

  void Error(std::string what) {
    if (errors_.size() < 20) errors_.push_back(std::move(what));
  }

  bool Keeps(uint32_t a, uint32_t b) const {
    const auto& peers = devs_[a]->peers;
    auto it = std::lower_bound(peers.begin(), peers.end(), b, [](const TrimPeer& p, uint32_t id) { return p.id < id; });
    return it != peers.end() && it->id == b && it->keep;
  }

  void CheckCoverage(uint32_t v) {
    ++coverage_checks_;
    for (const TrimPeer& p : devs_[v]->peers) {
      if (!p.keep && !Keeps(p.id, v)) Error("edge " + std::to_string(v) + "-" + std::to_string(p.id) + " kept by nobody");
    }
  }

  void KillBusiestDevice() {
    // The device most relayed messages wait for: a root or relay in the
    // middle of its search, so its neighbours wait on it.
    std::map<uint32_t, size_t> waiting;
    for (const auto& [k, q] : relay_) waiting[k.second] += q.size();
    uint32_t victim = waiting.begin()->first;
    for (const auto& [id, n] : waiting) {
      if (n > waiting[victim]) victim = id;
    }
    killed_ = devs_[victim].get();
    killed_->alive = false;
    killed_->inbox.clear();
    killed_->uploads.clear();
    inbox_ready_.Erase(victim);
    upload_ready_.Erase(victim);
    for (auto& [k, q] : relay_) {
      if (k.second == victim) {
        q.clear();
        relay_ready_.Erase(k);
      }
    }
  }

  void Feed(Dev& d, nodefl_wire_Envelope e) {
    e.version = protocol::kProtocolVersion;
    e.seq = ++d.seq;
    std::vector<uint8_t> frame(kMaxFrame);
    Result<size_t> n = protocol::EncodeFrame(e, frame);
    if (!n.ok()) {
      Error("cannot frame an envelope");
      return;
    }
    size_t pos = 0;
    while (pos < *n) {
      size_t consumed = 0;
      const Status s = d.session->OnReceived(ConstByteSpan(frame.data() + pos, *n - pos), now_, &consumed);
      if (!s.ok()) {
        Error("device " + std::to_string(d.id) + ": " + s.str());
        return;
      }
      pos += consumed;
      Collect(d);
    }
    if (!d.session->Poll(now_).ok()) Error("device " + std::to_string(d.id) + ": poll failed");
    Collect(d);
  }

  void Collect(Dev& d) {
    const ConstByteSpan bytes = d.session->PendingOutput();
    size_t pos = 0;
    auto e = std::make_unique<nodefl_wire_Envelope>();
    while (pos + protocol::kFrameHeaderBytes <= bytes.size()) {
      const size_t len = (size_t{bytes[pos]} << 24) | (size_t{bytes[pos + 1]} << 16) |
                         (size_t{bytes[pos + 2]} << 8) | bytes[pos + 3];
      if (!protocol::DecodeEnvelope(bytes.subspan(pos + protocol::kFrameHeaderBytes, len), e.get()).ok()) {
        Error("undecodable frame from device " + std::to_string(d.id));
      } else {
        Handle(d, *e);
      }
      pos += protocol::kFrameHeaderBytes + len;
    }
    d.session->ConsumeOutput(bytes.size());
  }

  void Handle(Dev& d, const nodefl_wire_Envelope& e) {
    if (!d.alive) return;
    switch (e.which_body) {
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        if (e.job_id != kJob) Error("relay for another job");
        // One size for every trimming message: the relay learns nothing
        // from sizes.
        if (r.sealed.size != kTrimMessageBytes + seal::kSealOverheadBytes) Error("a relayed message of another size");
        if (r.dst >= devs_.size()) {
          Error("relay to an unknown device");
          break;
        }
        ++relayed_;
        if (devs_[r.dst]->alive) {
          relay_[{d.id, r.dst}].emplace_back(r.sealed.bytes, r.sealed.bytes + r.sealed.size);
          relay_ready_.Insert({d.id, r.dst});
        }
        break;
      }
      case nodefl_wire_Envelope_job_data_tag:
        d.uploads.push_back([this, id = d.id, round = e.round, kind = e.body.job_data.kind,
                             bytes = std::vector<uint8_t>(e.body.job_data.data.bytes,
                                                          e.body.job_data.data.bytes + e.body.job_data.data.size)] {
          Dispatch(job_.OnUpload(id, round, kind, bytes, now_));
        });
        upload_ready_.Insert(d.id);
        break;
      case nodefl_wire_Envelope_job_report_tag:
        d.uploads.push_back([this, id = d.id, round = e.round, report = e.body.job_report] {
          Dispatch(job_.OnReport(id, round, report, now_));
        });
        upload_ready_.Insert(d.id);
        break;
      default:
        break;
    }
  }

  void Dispatch(std::vector<server::jobs::RoundStart> starts) {
    for (const server::jobs::RoundStart& s : starts) {
      for (uint32_t v : s.devices) {
        Dev& d = *devs_[v];
        if (!d.alive) {
          job_.OnUndeliverable(v, now_);
          continue;
        }
        nodefl_wire_Envelope e = Envelope(nodefl_wire_Envelope_job_start_tag, kJob, s.round);
        e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
        e.body.job_start.deadline_ms = s.deadline_ms;
        std::memcpy(e.body.job_start.parameters.bytes, s.parameters.data(), s.parameters.size());
        e.body.job_start.parameters.size = static_cast<pb_size_t>(s.parameters.size());
        d.inbox.push_back(e);
        inbox_ready_.Insert(v);
      }
    }
    for (server::jobs::DeviceData& data : job_.TakeData()) {
      Dev& d = *devs_[data.device];
      if (!d.alive) {
        job_.OnUndeliverable(data.device, now_);
        continue;
      }
      nodefl_wire_Envelope e = Envelope(nodefl_wire_Envelope_job_data_tag, kJob, data.round);
      e.body.job_data.kind = data.kind;
      std::memcpy(e.body.job_data.data.bytes, data.bytes.data(), data.bytes.size());
      e.body.job_data.data.size = static_cast<pb_size_t>(data.bytes.size());
      d.inbox.push_back(e);
      inbox_ready_.Insert(data.device);
    }
  }

  // One message, chosen at random among everything deliverable: a device's
  // next frame from the server, the next relayed message of one (sender,
  // receiver) pair, or the server reading one device's next record.
  bool DeliverOne() {
    int kinds[3];
    int count = 0;
    if (!inbox_ready_.empty()) kinds[count++] = 0;
    if (!relay_ready_.empty()) kinds[count++] = 1;
    if (!upload_ready_.empty()) kinds[count++] = 2;
    if (count == 0) return false;
    int kind = kinds[rng_() % count];
    if (o_.relays_first && !relay_ready_.empty()) kind = 1;
    if (kind == 0) {
      const uint32_t v = inbox_ready_.Pick(rng_);
      Dev& d = *devs_[v];
      const nodefl_wire_Envelope e = d.inbox.front();
      d.inbox.pop_front();
      if (d.inbox.empty()) inbox_ready_.Erase(v);
      Feed(d, e);
      CheckCoverage(v);
    } else if (kind == 1) {
      const std::pair<uint32_t, uint32_t> k = relay_ready_.Pick(rng_);
      auto& q = relay_[k];
      std::vector<uint8_t> sealed = std::move(q.front());
      q.pop_front();
      if (q.empty()) relay_ready_.Erase(k);
      Dev& d = *devs_[k.second];
      nodefl_wire_Envelope e = Envelope(nodefl_wire_Envelope_relay_deliver_tag, kJob, 0);
      e.body.relay_deliver.src = k.first;
      e.body.relay_deliver.relay_id = ++d.relay_id;
      std::memcpy(e.body.relay_deliver.sealed.bytes, sealed.data(), sealed.size());
      e.body.relay_deliver.sealed.size = static_cast<pb_size_t>(sealed.size());
      Feed(d, e);
      CheckCoverage(k.second);
    } else {
      // The server reads each connection in order.
      const uint32_t v = upload_ready_.Pick(rng_);
      Dev& d = *devs_[v];
      auto f = std::move(d.uploads.front());
      d.uploads.pop_front();
      if (d.uploads.empty()) upload_ready_.Erase(v);
      f();
    }
    return true;
  }

  const Graph g_;
  FleetOptions o_;
  std::mt19937_64 rng_;
  uint64_t now_ = 1'000'000;
  server::jobs::LumosTrimJob job_;
  std::vector<std::unique_ptr<Dev>> devs_;
  std::map<std::pair<uint32_t, uint32_t>, std::deque<std::vector<uint8_t>>> relay_;
  RandomBag<uint32_t> inbox_ready_, upload_ready_;
  RandomBag<std::pair<uint32_t, uint32_t>> relay_ready_;
  Dev* killed_ = nullptr;
  uint64_t coverage_checks_ = 0;
  uint64_t relayed_ = 0;
  std::vector<std::string> errors_;
};

}  // namespace nodefl::lumos::fleet
