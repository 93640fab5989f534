// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-mcmc job in one process, without TLS: the server's LumosMcmcJob
// against real DeviceSessions running LumosMcmcRole, joined by a fake
// network that delivers every message in a random order while keeping the
// order of each connection (server to device, device to server, and each
// relayed (sender, receiver) pair), as TCP and the relay do. It answers the
// devices' key requests as the server does (certificate lookups are
// replaced by fixed pair keys through seal::PairKeySource; the job keys are
// the devices' own, by ECDH).
//
// It checks Lumos Eq. 10 after every delivery on the edges of the device
// that received it, and it checks Alg. 2 against the devices' true state:
// when the server sends kMcmcMove the device must hold the maximum workload
// (Alg. 3 found it), and when a move's kMcmcMoveDone reaches the server the
// true f(X') - f(X) is recorded for comparison with what Eq. 18 was told.
//
// Problems are collected as text (errors()), not asserted.
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
#include <utility>
#include <vector>

#include "lumos_test_keys.h"
#include "lumos_trim_fleet.h"  // Graph, MakeGraph, RandomBag
#include "nodefl/core/little_endian.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/mcmc_role.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/random/drbg.h"
#include "nodefl/server/jobs/lumos_mcmc_job.h"
#include "nodefl/server/lumos/trimming/trimming.h"
#include "scripted_key_directory.h"
#include "session_frames.h"
#include "test_devices.h"

namespace nodefl::lumos::mcmc_fleet {

using fleet::Graph;
using fleet::MakeGraph;
using fleet::RandomBag;

struct McmcFleetOptions {
  uint64_t seed = 1;
  uint32_t iterations = 10;
  uint32_t kill_mover_at = 0;   // the device picked at this iteration goes away before its move (0: none)
  uint32_t kill_other_at = 0;   // a device that is not picked goes away at this iteration's move
  uint32_t deadline_ms = 5'000;
};

// What the fleet saw of one move.
struct ObservedMove {
  uint32_t iteration = 0;
  uint32_t u = 0;
  uint32_t true_max_before = 0;  // f(X_t), the true maximum when kMcmcMove was sent
  uint32_t u_workload = 0;       // u's workload then (must equal the maximum)
  bool done = false;
  uint32_t true_max_after = 0;   // f(X'_t) when kMcmcMoveDone reached the server
};

class McmcFleet {
 public:
  static constexpr uint64_t kJob = 0x52;

  McmcFleet(const Graph& g, const McmcFleetOptions& o)
      : g_(g), o_(o), rng_(o.seed), job_(JobOptions(o), Ids(g.n), g.edges) {
    // No certificates: the pair keys are fixed (FixedPairKeys).
    directory_.rules.known = [this](uint32_t id) { return id < devs_.size(); };
    directory_.rules.gone = [this](uint32_t from) { return !devs_[from]->alive; };
    for (uint32_t v = 0; v < g.n; ++v) {
      auto d = std::make_unique<Dev>(v, Identities());
      const size_t deg = g.adj[v].size();
      d->peers.resize(deg);
      d->keys.resize(deg);
      d->cache.resize(16);
      d->tables.assign(4, std::vector<uint8_t>(compare::PlanComparison(16).value().table_bytes()));
      for (size_t i = 0; i < 4; ++i) {
        d->contexts[i].Bind(Span<compare::ComparisonSlot>(&d->slots[i], 1), ByteSpan(d->tables[i]));
      }
      // Lumos Alg. 1 in plaintext (the secure-compare job's result): keep
      // the neighbour unless its round(ln deg) is lower; both keep a tie.
      const uint32_t lv = server::lumos::LogDegree(static_cast<uint32_t>(deg));
      uint32_t greedy = 0;
      for (size_t i = 0; i < deg; ++i) {
        const uint32_t u = g.adj[v][i];
        d->peers[i].id = d->keys[i].id = u;
        const uint32_t lu = server::lumos::LogDegree(static_cast<uint32_t>(g.adj[u].size()));
        d->peers[i].keep = lu >= lv;
        greedy += d->peers[i].keep ? 1 : 0;
      }
      d->role = std::make_unique<LumosMcmcRole>(
          v, Span<McmcPeer>(d->peers), Span<roles::KeyedPeer>(d->keys), Span<roles::KeyedPeer>(d->cache),
          Span<McmcContext>(d->contexts), d->creds.credentials, &crypto::DrbgRandom, &d->creds.drbg);
      d->role->SetPairKeySource(seal::PairKeySource{&FixedPairKeys, nullptr});
      if (!d->role->Init().ok()) Error("role " + std::to_string(v) + ": Init failed");
      d->role->Bind(greedy);
      d->frame.resize(kMaxFrame);
      d->out.resize(16 * kMaxFrame);
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
  }

  // Runs the job to its end; false if it did not finish within the budget.
  bool Run(uint64_t max_events = 500'000'000) {
    Dispatch(job_.Begin(now_));
    uint64_t events = 0;
    while (!job_.finished() && events++ < max_events) {
      if (!DeliverOne()) {
        now_ += uint64_t{o_.deadline_ms} * 1000 + 1;  // quiet: only a deadline moves the job on
        Dispatch(job_.Poll(now_));
        continue;
      }
      if (events % 64 == 0) Dispatch(job_.Poll(now_));
    }
    return job_.finished();
  }

  const server::jobs::LumosMcmcJob& job() const { return job_; }
  const LumosMcmcRole& role(uint32_t v) const { return *devs_[v]->role; }
  const std::vector<ObservedMove>& moves() const { return moves_; }
  const std::vector<std::string>& errors() const { return errors_; }
  uint64_t coverage_checks() const { return coverage_checks_; }
  uint64_t relayed() const { return relayed_; }
  const std::set<uint32_t>& killed() const { return killed_; }
  uint32_t TrueMax() const {
    uint32_t m = 0;
    for (const auto& d : devs_) {
      if (d->alive) m = std::max(m, d->role->workload());
    }
    return m;
  }
  bool Keeps(uint32_t a, uint32_t b) const {
    const auto& peers = devs_[a]->peers;
    auto it = std::lower_bound(peers.begin(), peers.end(), b, [](const McmcPeer& p, uint32_t id) { return p.id < id; });
    return it != peers.end() && it->id == b && it->keep;
  }

 private:
  static constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

  struct Dev {
    Dev(uint32_t v, ::nodefl::testing::LastingIdentities& ids) : id(v), creds(ids.pki(), v), contexts(4), slots(4) {}
    uint32_t id;
    ::nodefl::testing::DeviceCredentials creds;
    std::vector<McmcPeer> peers;
    std::vector<roles::KeyedPeer> keys, cache;
    std::vector<McmcContext> contexts;
    std::vector<compare::ComparisonSlot> slots;
    std::vector<std::vector<uint8_t>> tables;
    std::unique_ptr<LumosMcmcRole> role;
    std::vector<uint8_t> frame, out;
    std::unique_ptr<device::DeviceSession> session;
    std::deque<nodefl_wire_Envelope> inbox;
    std::deque<std::function<void()>> uploads;
    uint64_t seq = 0;
    bool alive = true;
  };

  static ::nodefl::testing::LastingIdentities& Identities() {
    static auto* ids = new ::nodefl::testing::LastingIdentities(53);
    return *ids;
  }
  // Both ends of a pair get the same keys without a certificate check.
  static Status FixedPairKeys(void*, const tls::TlsCredentials&, ConstByteSpan, uint32_t own_id, uint32_t peer_id,
                              crypto::RandomFunction, void*, seal::PairKeys* out) {
    *out = testing::KeysFor(own_id, peer_id);
    return Status::Ok();
  }
  static server::jobs::LumosMcmcOptions JobOptions(const McmcFleetOptions& o) {
    server::jobs::LumosMcmcOptions j;
    j.job_id = kJob;
    j.iterations = o.iterations;
    j.seed = o.seed;
    j.round_deadline_ms = o.deadline_ms;
    j.step_deadline_ms = o.deadline_ms;
    j.session_timeout_ms = o.deadline_ms;
    j.upload_kept = true;
    return j;
  }
  static std::vector<uint32_t> Ids(uint32_t n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }
  static nodefl_wire_Envelope Envelope(pb_size_t tag, uint64_t job, uint32_t round) {
    return ::nodefl::testing::AddressedEnvelope(tag, job, round);
  }

  void Error(std::string what) {
    if (errors_.size() < 20) errors_.push_back(std::move(what));
  }

  void CheckCoverage(uint32_t v) {
    ++coverage_checks_;
    for (const McmcPeer& p : devs_[v]->peers) {
      if (!p.keep && !Keeps(p.id, v)) Error("edge " + std::to_string(v) + "-" + std::to_string(p.id) + " kept by nobody");
    }
  }

  void Kill(uint32_t v) {
    Dev& d = *devs_[v];
    if (!d.alive) return;
    d.alive = false;
    killed_.insert(v);
    d.inbox.clear();
    d.uploads.clear();
    inbox_ready_.Erase(v);
    upload_ready_.Erase(v);
    for (auto& [k, q] : relay_) {
      if (k.second == v) {
        q.clear();
        relay_ready_.Erase(k);
      }
    }
  }

  void Feed(Dev& d, const nodefl_wire_Envelope& e) {
    const std::vector<uint8_t> frame = ::nodefl::testing::FrameTo(e, ++d.seq);
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      const Status s = d.session->OnReceived(ConstByteSpan(frame).subspan(pos), now_, &consumed);
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
    ::nodefl::testing::DrainSessionOutput(*d.session, [&](const nodefl_wire_Envelope& e) { Handle(d, e); });
  }

  void AnswerKeyRequests() {
    directory_.Answer(kJob, [&](uint32_t to, const nodefl_wire_Envelope& c) {
      devs_[to]->inbox.push_back(c);
      inbox_ready_.Insert(to);
    });
  }

  void Handle(Dev& d, const nodefl_wire_Envelope& e) {
    if (!d.alive) return;
    switch (e.which_body) {
      case nodefl_wire_Envelope_job_key_tag:
        directory_.OnJobKey(d.id, e.body.job_key);
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_peer_key_request_tag:
        directory_.OnKeyRequest(d.id, e.body.peer_key_request, e.round);
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        if (e.job_id != kJob) Error("relay for another job");
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
          if (kind == kMcmcMoveDone) ObserveMoveDone(id, bytes);
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

  void ObserveMoveDone(uint32_t device, const std::vector<uint8_t>& bytes) {
    Result<McmcMoveDone> done = DecodeMcmcMoveDone(bytes);
    if (!done.ok()) {
      Error("undecodable kMcmcMoveDone");
      return;
    }
    if (done->reverted || moves_.empty() || moves_.back().iteration != done->iteration || moves_.back().u != device) {
      return;
    }
    // Every kGive was answered before this was sent: the state is X'_t.
    moves_.back().done = true;
    moves_.back().true_max_after = TrueMax();
  }

  void ObserveMove(uint32_t device, const std::vector<uint8_t>& bytes) {
    if (bytes.size() != 4) {
      Error("kMcmcMove of " + std::to_string(bytes.size()) + " bytes");
      return;
    }
    ObservedMove m;
    m.iteration = LoadU32Le(bytes.data());
    m.u = device;
    if (o_.kill_other_at != 0 && m.iteration == o_.kill_other_at) {
      // A device that is neither the mover nor one of its neighbours.
      for (uint32_t v = 0; v < devs_.size(); ++v) {
        if (v == device || !devs_[v]->alive) continue;
        if (std::binary_search(g_.adj[device].begin(), g_.adj[device].end(), v)) continue;
        Kill(v);
        break;
      }
    }
    // Nothing moves between Alg. 3's last comparison and this record:
    // the state is X_t.
    m.true_max_before = TrueMax();
    m.u_workload = devs_[device]->role->workload();
    moves_.push_back(m);
    if (o_.kill_mover_at != 0 && m.iteration == o_.kill_mover_at) Kill(device);
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
        e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC;
        e.body.job_start.deadline_ms = s.deadline_ms;
        std::memcpy(e.body.job_start.parameters.bytes, s.parameters.data(), s.parameters.size());
        e.body.job_start.parameters.size = static_cast<pb_size_t>(s.parameters.size());
        d.inbox.push_back(e);
        inbox_ready_.Insert(v);
      }
    }
    for (server::jobs::DeviceData& data : job_.TakeData()) {
      if (data.kind == kMcmcMove) ObserveMove(data.device, data.bytes);
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

  bool DeliverOne() {
    int kinds[3];
    int count = 0;
    if (!inbox_ready_.empty()) kinds[count++] = 0;
    if (!relay_ready_.empty()) kinds[count++] = 1;
    if (!upload_ready_.empty()) kinds[count++] = 2;
    if (count == 0) return false;
    const int kind = kinds[rng_() % count];
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
      Feed(*devs_[k.second], directory_.Deliver(k.first, k.second, sealed, kJob, 2));
      CheckCoverage(k.second);
    } else {
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
  McmcFleetOptions o_;
  std::mt19937_64 rng_;
  uint64_t now_ = 1'000'000;
  server::jobs::LumosMcmcJob job_;
  std::vector<std::unique_ptr<Dev>> devs_;
  std::map<std::pair<uint32_t, uint32_t>, std::deque<std::vector<uint8_t>>> relay_;
  RandomBag<uint32_t> inbox_ready_, upload_ready_;
  RandomBag<std::pair<uint32_t, uint32_t>> relay_ready_;
  ::nodefl::testing::ScriptedKeyDirectory directory_;  // nodefl-server's key directory and relay numbering
  std::vector<ObservedMove> moves_;
  std::set<uint32_t> killed_;
  uint64_t coverage_checks_ = 0;
  uint64_t relayed_ = 0;
  std::vector<std::string> errors_;
};

}  // namespace nodefl::lumos::mcmc_fleet
