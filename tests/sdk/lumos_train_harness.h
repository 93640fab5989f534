// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The harness of the LumosTrainRole tests: a small world (6 devices, who
// keeps which edge, binary features, labels), devices with their sessions,
// and a scripted server that answers key requests like the real one,
// relays sealed messages and collects what the devices upload.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/device/device_session.h"
#include "nodefl/lumos/train_role.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "scripted_key_directory.h"
#include "session_frames.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::lumos::train_harness {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using ::nodefl::testing::TestIdentity;

inline constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
inline constexpr uint64_t kJob = 0x77;

inline ::nodefl::testing::LastingIdentities& Identities() {
  static auto* identities = new ::nodefl::testing::LastingIdentities(59);
  return *identities;
}

// 6 devices: edges with who keeps them (0: the lower id, 1: the higher, 2: both).
struct World {
  uint32_t n = 6;
  std::vector<std::pair<uint32_t, uint32_t>> edges = {{0, 1}, {0, 2}, {1, 2}, {2, 3}, {3, 4}, {2, 4}, {4, 5}};
  std::vector<int> keeper = {0, 2, 1, 0, 1, 0, 1};
  std::vector<std::vector<uint32_t>> adj, kept;
  std::vector<std::vector<float>> features;
  std::vector<int32_t> labels = {0, 1, 2, 1, -1, 0};
  uint32_t d = 12;
  World() {
    adj.resize(n);
    kept.resize(n);
    for (size_t e = 0; e < edges.size(); ++e) {
      const auto [a, b] = edges[e];
      adj[a].push_back(b);
      adj[b].push_back(a);
      if (keeper[e] == 0 || keeper[e] == 2) kept[a].push_back(b);
      if (keeper[e] == 1 || keeper[e] == 2) kept[b].push_back(a);
    }
    for (auto& l : adj) std::sort(l.begin(), l.end());
    for (auto& l : kept) std::sort(l.begin(), l.end());
    std::mt19937_64 rng(3);
    std::bernoulli_distribution coin(0.3);
    features.resize(n);
    for (auto& f : features) {
      f.resize(d);
      for (float& x : f) x = coin(rng) ? 1.0f : 0.0f;
    }
  }
};

// The link task's edge split and partners in these tests.
inline constexpr uint64_t kEdgeSeed = 20;  // holds out (1,2) for validation, (2,3) and (2,4) for test
inline constexpr uint8_t kNegatives = 2, kEvalNegatives = 2;

inline TrainParameters Params(TrainPhase phase, bool paper, uint32_t epoch = 0, bool train = true,
                              TrainTask task = TrainTask::kNode, uint16_t projection = 0) {
  TrainParameters p;
  p.task = task;
  p.projection = projection;
  p.projection_seed = 0xC0FFEE;
  if (task == TrainTask::kLink) {
    p.negatives = kNegatives;
    p.eval_negatives = kEvalNegatives;
    p.edge_seed = kEdgeSeed;
  }
  p.phase = phase;
  p.paper = paper;
  p.layer = 1;
  p.features = 12;
  p.hidden = 8;
  p.out = 4;
  p.heads = 2;
  p.classes = task == TrainTask::kLink ? 0 : 3;
  p.dropout = 0.0f;  // deterministic: the test recomputes the federation
  p.epsilon = 2.0f;
  p.label_epsilon = 2.0f;
  gnn::ModelShape s;
  s.features = ModelFeatures(p);
  s.hidden = p.hidden;
  s.out = p.out;
  s.heads = p.heads;
  s.classes = p.classes;
  p.parameters = static_cast<uint32_t>(gnn::LayoutOf(s)->total);
  for (int i = 0; i < 16; ++i) p.salt[i] = static_cast<uint8_t>(i + 5);
  p.epoch = epoch;
  p.train = train;
  return p;
}

inline std::vector<uint8_t> Encoded(const TrainParameters& p) {
  std::vector<uint8_t> out(kTrainParametersBytes);
  EXPECT_TRUE(EncodeTrainParameters(p, ByteSpan(out)).ok());
  return out;
}

// Room for secure sum's mask peers (TrainSecureSumMemory) in the tests'
// devices: every other device of a small world.
inline constexpr uint32_t kSecureSumPeers = 32;

class Device {
 public:
  Device(const World& w, uint32_t id, bool bound, const PrivacyBudget& budget, uint32_t secure_peers = kSecureSumPeers)
      : id_(id),
        identity_(Identities().Of(id)),
        peers_(w.adj[id].size()),
        keys_(w.adj[id].size()),
        partners_(kNegatives + kEvalNegatives),
        partner_keys_(kNegatives + kEvalNegatives),
        agg_peers_(secure_peers),
        agg_shares_(2 * size_t{secure_peers}),
        agg_points_(secure_peers),
        agg_keys_(secure_peers),
        agg_held_(secure_peers),
        memory_(256 * 1024),
        ledger_entries_(8),
        ledger(Span<LedgerEntry>(ledger_entries_), budget),
        role(id, Span<TrainPeer>(peers_), Span<roles::KeyedPeer>(keys_), ByteSpan(memory_), credentials_,
             &crypto::DrbgRandom, &tls_rng_, noise_, ledger),
        frame_(kMaxFrame),
        output_(16 * kMaxFrame),
        session(Options(id), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(Identities().pki().Load(identity_, &credentials_).ok());
    EXPECT_TRUE(tls_rng_.SeedDeterministic(71, id).ok());
    EXPECT_TRUE(noise_.SeedDeterministic(72, id).ok());
    for (size_t i = 0; i < peers_.size(); ++i) {
      peers_[i].id = keys_[i].id = w.adj[id][i];
      peers_[i].keep = std::binary_search(w.kept[id].begin(), w.kept[id].end(), w.adj[id][i]);
    }
    role.SetLinkMemory(Span<TrainPeer>(partners_), Span<roles::KeyedPeer>(partner_keys_));
    TrainSecureSumMemory secure;
    secure.peers = Span<secagg::AggregationPeer>(agg_peers_);
    secure.shares = Span<secagg::Share>(agg_shares_);
    secure.points = Span<uint64_t>(agg_points_);
    secure.keys = Span<roles::KeyedPeer>(agg_keys_);
    secure.held = Span<secagg::HeldMessage>(agg_held_);
    role.SetSecureSumMemory(secure, tls_rng_);
    EXPECT_TRUE(role.Init().ok());
    role.SetData(Span<const float>(w.features[id]), w.labels[id]);
    if (bound) role.Bind();
    EXPECT_TRUE(session.AddRole(role).ok());
  }
  uint32_t id() const { return id_; }
  const std::vector<uint8_t>& certificate_der() const { return identity_.certificate_der; }

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
  Drbg tls_rng_, noise_;
  std::vector<TrainPeer> peers_;
  std::vector<roles::KeyedPeer> keys_;
  std::vector<TrainPeer> partners_;
  std::vector<roles::KeyedPeer> partner_keys_;
  std::vector<secagg::AggregationPeer> agg_peers_;
  std::vector<secagg::Share> agg_shares_;
  std::vector<uint64_t> agg_points_;
  std::vector<roles::KeyedPeer> agg_keys_;
  std::vector<secagg::HeldMessage> agg_held_;
  std::vector<uint8_t> memory_;
  std::vector<LedgerEntry> ledger_entries_;

 public:
  PrivacyLedger ledger;
  LumosTrainRole role;

 private:
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
};

class Server {
 public:
  explicit Server(const World& w, bool bound = true, PrivacyBudget budget = PrivacyBudget::Unlimited(),
                  std::set<uint32_t> unbound = {})
      : w_(w) {
    directory_.rules.certificate_der = [this](uint32_t id) -> ConstByteSpan { return devices_[id]->certificate_der(); };
    directory_.rules.held = [this](uint32_t from) { return hold_keys_for.count(from) != 0; };
    for (uint32_t v = 0; v < w.n; ++v) {
      devices_.push_back(std::make_unique<Device>(w, v, bound && unbound.count(v) == 0, budget));
      Device& d = *devices_.back();
      inbox_.emplace_back();
      seq_.push_back(0);
      EXPECT_TRUE(d.session.Start(now).ok());
      d.session.ConsumeOutput(d.session.PendingOutput().size());
      auto e = Envelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      e.body.welcome.resume_token.size = 32;
      std::memset(e.body.welcome.resume_token.bytes, 0x33, 32);
      Feed(d, Frame(v, e));
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
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN;
    std::memcpy(e.body.job_start.parameters.bytes, params.data(), params.size());
    e.body.job_start.parameters.size = static_cast<pb_size_t>(params.size());
    inbox_[to].push_back(Frame(to, e));
  }
  void Data(uint32_t to, uint32_t round, uint32_t kind, const std::vector<uint8_t>& bytes) {
    auto e = Envelope(nodefl_wire_Envelope_job_data_tag, kJob, round);
    e.body.job_data.kind = kind;
    std::memcpy(e.body.job_data.data.bytes, bytes.data(), bytes.size());
    e.body.job_data.data.size = static_cast<pb_size_t>(bytes.size());
    inbox_[to].push_back(Frame(to, e));
  }
  void Setup(bool paper) {
    for (uint32_t v = 0; v < w_.n; ++v) {
      JobStart(v, 1, Encoded(Params(TrainPhase::kSetup, paper, 0, true, TrainTask::kNode, projection)));
      Data(v, 1, kTrainAssignment, {static_cast<uint8_t>(v % 3 == 2 ? 1 : 0)});  // 2 and 5 validate
    }
    Pump();
  }
  // Link task: `partners` are (a, b, use) pairs, sent to both ends before
  // the assignment.
  void SetupLink(bool paper, const std::vector<std::tuple<uint32_t, uint32_t, uint8_t>>& partners) {
    for (uint32_t v = 0; v < w_.n; ++v) {
      JobStart(v, 1, Encoded(Params(TrainPhase::kSetup, paper, 0, true, TrainTask::kLink)));
      std::vector<uint8_t> rec;
      for (const auto& [a, b, use] : partners) {
        if (a != v && b != v) continue;
        rec.resize(rec.size() + 5);
        StoreU32Le(a == v ? b : a, rec.data() + rec.size() - 5);
        rec.back() = use;
      }
      if (!rec.empty()) Data(v, 1, kTrainPartners, rec);
      Data(v, 1, kTrainAssignment, {0});
    }
    Pump();
  }
  // `skip`: devices not sent the epoch (gone, as far as the others know).
  void Epoch(bool paper, uint32_t epoch, const std::vector<float>& params, bool train = true,
             TrainTask task = TrainTask::kNode, const std::set<uint32_t>& skip = {}) {
    for (uint32_t v = 0; v < w_.n; ++v) {
      if (skip.count(v) != 0) continue;
      JobStart(v, 1 + epoch, Encoded(Params(TrainPhase::kEpoch, paper, epoch, train, task, projection)));
      for (size_t first = 0; first < params.size(); first += kTrainFloatsPerRecord) {
        const size_t count = std::min(kTrainFloatsPerRecord, params.size() - first);
        std::vector<uint8_t> rec(4 + 4 * count);
        StoreU32Le(static_cast<uint32_t>(first), rec.data());
        for (size_t i = 0; i < count; ++i) StoreF32Le(params[first + i], rec.data() + 4 + 4 * i);
        Data(v, 1 + epoch, kTrainParams, rec);
      }
    }
    Pump();
  }

  void Feed(Device& d, const std::vector<uint8_t>& frame) {
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      ASSERT_TRUE(d.session.OnReceived(ConstByteSpan(frame).subspan(pos), now, &consumed).ok());
      pos += consumed;
      Collect(d);
    }
  }
  void Collect(Device& d) {
    ::nodefl::testing::DrainSessionOutput(d.session, [&](const nodefl_wire_Envelope& e) { Handle(d.id(), e); });
  }
  void Handle(uint32_t from, const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_job_key_tag:
        directory_.OnJobKey(from, e.body.job_key);
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_peer_key_request_tag:
        directory_.OnKeyRequest(from, e.body.peer_key_request, e.round);
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        ++relayed;
        const nodefl_wire_Envelope d = directory_.Deliver(from, r, kJob, e.round);
        ASSERT_LT(r.dst, w_.n);
        inbox_[r.dst].push_back(Frame(r.dst, d));
        break;
      }
      case nodefl_wire_Envelope_job_data_tag: {
        const ConstByteSpan data = protocol::BytesOf(e.body.job_data.data);
        if (e.body.job_data.kind == kTrainGradient) {
          const uint32_t first = LoadU32Le(data.data());
          auto& g = gradients[from];
          for (size_t i = 0; i + 4 < data.size(); i += 4) {
            if (g.size() <= first + i / 4) g.resize(first + i / 4 + 1, 0.0f);
            g[first + i / 4] = LoadF32Le(data.data() + 4 + i);
          }
        } else if (e.body.job_data.kind == kTrainMetrics) {
          Result<TrainMetrics> m = DecodeTrainMetrics(data);
          ASSERT_TRUE(m.ok());
          metrics[from] = *m;
        } else if (e.body.job_data.kind == kTrainLinkScores) {
          ASSERT_GE(data.size(), 4u);
          ASSERT_EQ(data.size() % 2, 0u);
          for (size_t i = 4; i < data.size(); i += 2) scores[from].push_back({data[i], data[i + 1]});
        } else if (e.body.job_data.kind == kTrainSummary) {
          Result<TrainSummary> s = DecodeTrainSummary(data);
          ASSERT_TRUE(s.ok());
          summaries[from] = *s;
        } else {
          ADD_FAILURE() << "unexpected JobData " << e.body.job_data.kind;
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
  void Pump(int max_rounds = 10'000) {
    for (int round = 0; round < max_rounds; ++round) {
      bool moved = false;
      for (uint32_t v = 0; v < w_.n; ++v) {
        while (!inbox_[v].empty()) {
          std::vector<uint8_t> f = std::move(inbox_[v].front());
          inbox_[v].pop_front();
          Feed(*devices_[v], f);
          moved = true;
        }
      }
      for (uint32_t v = 0; v < w_.n; ++v) {
        Device& d = *devices_[v];
        EXPECT_TRUE(d.session.Poll(now).ok());
        if (!d.session.PendingOutput().empty()) moved = true;
        Collect(d);
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "no quiescence";
  }

  uint64_t now = 5'000;
  uint16_t projection = 0;  // node task: the public projection's width (0: none)
  uint64_t relayed = 0;
  std::set<uint32_t> hold_keys_for;  // their key requests wait (ReleaseKeys)
  void ReleaseKeys() {
    hold_keys_for.clear();
    AnswerKeyRequests();
  }
  std::map<uint32_t, std::vector<float>> gradients;
  std::map<uint32_t, TrainMetrics> metrics;
  std::map<uint32_t, std::vector<std::pair<uint8_t, uint8_t>>> scores;  // kind, bin
  std::map<uint32_t, TrainSummary> summaries;
  std::map<std::pair<uint32_t, uint32_t>, nodefl_wire_JobReport> reports;

 private:
  const World& w_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::deque<std::vector<uint8_t>>> inbox_;
  std::vector<uint64_t> seq_;
  ::nodefl::testing::ScriptedKeyDirectory directory_;  // nodefl-server's key directory and relay
};

inline std::vector<float> RandomParams(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.4);
  std::vector<float> p(n);
  for (float& x : p) x = static_cast<float>(normal(rng));
  return p;
}


// Double-precision copies of the devices' trees, fed the features the roles
// hold, run forward without dropout and pooled: what the tests recompute a
// federation's gradient from, without any message. kept[v]: the neighbours
// with a leaf pair in v's tree, ascending.
struct TrainerCopy {
  std::vector<uint32_t> rows, csr;
  std::vector<double> scalars;
  TreeTrainer<double> t;
};
inline std::vector<std::unique_ptr<TrainerCopy>> PooledCopies(Server& s, const gnn::ModelShape& shape,
                                                              const std::vector<std::vector<uint32_t>>& kept,
                                                              const std::vector<double>& params) {
  std::vector<std::unique_ptr<TrainerCopy>> copies;
  for (uint32_t v = 0; v < kept.size(); ++v) {
    auto c = std::make_unique<TrainerCopy>();
    const uint32_t wl = static_cast<uint32_t>(kept[v].size());
    const TrainerSizing size = SizeTrainer(shape, gnn::TreeKind::kLumosTree, wl);
    c->rows.resize(size.row_begin);
    c->csr.resize(size.csr);
    c->scalars.resize(size.scalars);
    EXPECT_TRUE(c->t.Bind(shape, gnn::TreeKind::kLumosTree, wl, Span<uint32_t>(c->rows), Span<uint32_t>(c->csr),
                          Span<double>(c->scalars))
                    .ok());
    c->t.features() = s[v].role.trainer().features().cast<double>();
    EXPECT_TRUE(c->t.Forward(Span<const double>(params), false, nullptr, nullptr).ok());
    c->t.ClearGradients();
    copies.push_back(std::move(c));
  }
  for (auto& c : copies) c->t.BeginPool();
  for (uint32_t u = 0; u < kept.size(); ++u) {
    for (uint32_t k = 0; k < kept[u].size(); ++k) {
      const auto leaf = copies[u]->t.NeighbourLeaf(k);
      EXPECT_TRUE(copies[kept[u][k]]->t.AddToPool(Span<const double>(leaf.data(), leaf.size())).ok());
    }
  }
  return copies;
}

}  // namespace nodefl::lumos::train_harness
