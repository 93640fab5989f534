// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosTrainRole against a scripted server that answers key requests like
// the real one and relays sealed messages: the setup round (keep notices,
// one-bit features to keepers, ledger entries), and epochs whose uploaded
// gradient contributions, summed, equal the federation's gradient computed
// independently from the same trees (TreeTrainer on copies of the devices'
// features, dropout off); metrics, an evaluation epoch without gradients,
// the report round, and the refusals (no trimming result, a budget too
// small for paper mode's unbounded releases).
#include "nodefl/lumos/train_role.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
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
constexpr uint64_t kJob = 0x77;

::nodefl::testing::LastingIdentities& Identities() {
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

TrainParameters Params(TrainPhase phase, bool paper, uint32_t epoch = 0, bool train = true) {
  TrainParameters p;
  p.phase = phase;
  p.paper = paper;
  p.layer = 1;
  p.features = 12;
  p.hidden = 8;
  p.out = 4;
  p.heads = 2;
  p.classes = 3;
  p.dropout = 0.0f;  // deterministic: the test recomputes the federation
  p.epsilon = 2.0f;
  p.label_epsilon = 2.0f;
  gnn::ModelShape s;
  s.features = p.features;
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

std::vector<uint8_t> Encoded(const TrainParameters& p) {
  std::vector<uint8_t> out(kTrainParametersBytes);
  EXPECT_TRUE(EncodeTrainParameters(p, ByteSpan(out)).ok());
  return out;
}

class Device {
 public:
  Device(const World& w, uint32_t id, bool bound, const PrivacyBudget& budget)
      : id_(id),
        identity_(Identities().Of(id)),
        peers_(w.adj[id].size()),
        keys_(w.adj[id].size()),
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
      JobStart(v, 1, Encoded(Params(TrainPhase::kSetup, paper)));
      Data(v, 1, kTrainAssignment, {static_cast<uint8_t>(v % 3 == 2 ? 1 : 0)});  // 2 and 5 validate
    }
    Pump();
  }
  void Epoch(bool paper, uint32_t epoch, const std::vector<float>& params, bool train = true) {
    for (uint32_t v = 0; v < w_.n; ++v) {
      JobStart(v, 1 + epoch, Encoded(Params(TrainPhase::kEpoch, paper, epoch, train)));
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
      case nodefl_wire_Envelope_job_key_tag: {
        const auto& k = e.body.job_key.public_key;
        job_keys_[from] = std::vector<uint8_t>(k.bytes, k.bytes + k.size);
        AnswerKeyRequests();
        break;
      }
      case nodefl_wire_Envelope_peer_key_request_tag:
        for (pb_size_t i = 0; i < e.body.peer_key_request.device_ids_count; ++i) {
          key_requests_.push_back({from, e.body.peer_key_request.device_ids[i]});
        }
        AnswerKeyRequests();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        ++relayed;
        auto d = Envelope(nodefl_wire_Envelope_relay_deliver_tag, kJob, e.round);
        d.body.relay_deliver.src = from;
        d.body.relay_deliver.relay_id = ++relay_ids_[r.dst];
        std::memcpy(d.body.relay_deliver.sealed.bytes, r.sealed.bytes, r.sealed.size);
        d.body.relay_deliver.sealed.size = r.sealed.size;
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
    std::vector<std::pair<uint32_t, uint32_t>> still;
    for (const auto& [from, id] : key_requests_) {
      if (job_keys_.count(id) == 0 || hold_keys_for.count(from) != 0) {
        still.push_back({from, id});
        continue;
      }
      auto c = Envelope(nodefl_wire_Envelope_peer_certificate_tag, kJob, 1);
      c.body.peer_certificate.device_id = id;
      c.body.peer_certificate.found = true;
      const std::vector<uint8_t>& der = devices_[id]->certificate_der();
      std::memcpy(c.body.peer_certificate.certificate_der.bytes, der.data(), der.size());
      c.body.peer_certificate.certificate_der.size = static_cast<pb_size_t>(der.size());
      const std::vector<uint8_t>& key = job_keys_.at(id);
      std::memcpy(c.body.peer_certificate.job_key.bytes, key.data(), key.size());
      c.body.peer_certificate.job_key.size = static_cast<pb_size_t>(key.size());
      inbox_[from].push_back(Frame(from, c));
    }
    key_requests_.swap(still);
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
  uint64_t relayed = 0;
  std::set<uint32_t> hold_keys_for;  // their key requests wait (ReleaseKeys)
  void ReleaseKeys() {
    hold_keys_for.clear();
    AnswerKeyRequests();
  }
  std::map<uint32_t, std::vector<float>> gradients;
  std::map<uint32_t, TrainMetrics> metrics;
  std::map<uint32_t, TrainSummary> summaries;
  std::map<std::pair<uint32_t, uint32_t>, nodefl_wire_JobReport> reports;

 private:
  const World& w_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::deque<std::vector<uint8_t>>> inbox_;
  std::vector<uint64_t> seq_;
  std::map<uint32_t, uint64_t> relay_ids_;
  std::map<uint32_t, std::vector<uint8_t>> job_keys_;
  std::vector<std::pair<uint32_t, uint32_t>> key_requests_;
};

// The federation's gradient from the devices' own trees and features,
// computed here without any message: what the uploads must add up to.
std::vector<double> ExpectedGradient(const World& w, Server& s, const std::vector<float>& params, bool paper) {
  const TrainParameters p = Params(TrainPhase::kEpoch, paper, 1);
  gnn::ModelShape shape;
  shape.features = p.features;
  shape.hidden = p.hidden;
  shape.out = p.out;
  shape.heads = p.heads;
  shape.classes = p.classes;
  shape.dropout = 0.0f;
  struct Copy {
    std::vector<uint32_t> rows, csr;
    std::vector<double> scalars;
    TreeTrainer<double> t;
  };
  std::vector<std::unique_ptr<Copy>> copies;
  const std::vector<double> pd(params.begin(), params.end());
  for (uint32_t v = 0; v < w.n; ++v) {
    auto c = std::make_unique<Copy>();
    const uint32_t wl = static_cast<uint32_t>(w.kept[v].size());
    const TrainerSizing size = SizeTrainer(shape, gnn::TreeKind::kLumosTree, wl);
    c->rows.resize(size.row_begin);
    c->csr.resize(size.csr);
    c->scalars.resize(size.scalars);
    EXPECT_TRUE(c->t.Bind(shape, gnn::TreeKind::kLumosTree, wl, Span<uint32_t>(c->rows), Span<uint32_t>(c->csr),
                          Span<double>(c->scalars))
                    .ok());
    c->t.features() = s[v].role.trainer().features().cast<double>();
    EXPECT_TRUE(c->t.Forward(Span<const double>(pd), false, nullptr, nullptr).ok());
    c->t.ClearGradients();
    copies.push_back(std::move(c));
  }
  for (uint32_t v = 0; v < w.n; ++v) copies[v]->t.BeginPool();
  for (uint32_t u = 0; u < w.n; ++u) {
    for (uint32_t k = 0; k < w.kept[u].size(); ++k) {
      const auto leaf = copies[u]->t.NeighbourLeaf(k);
      EXPECT_TRUE(copies[w.kept[u][k]]->t.AddToPool(Span<const double>(leaf.data(), leaf.size())).ok());
    }
  }
  std::vector<double> g(pd.size(), 0.0), pool(p.out);
  for (uint32_t v = 0; v < w.n; ++v) {
    const int32_t label = s[v].role.training_label();
    if (label < 0 || v % 3 == 2) continue;  // unlabelled, or in validation
    EXPECT_TRUE(copies[v]->t.SupervisedLoss(Span<const double>(pd), static_cast<uint32_t>(label), Span<double>(g)).ok());
    EXPECT_TRUE(copies[v]->t.PoolGradient(Span<double>(pool)).ok());
    EXPECT_TRUE(copies[v]->t.SetOwnLeafGradient(Span<const double>(pool)).ok());
    for (uint32_t u = 0; u < w.n; ++u) {
      const auto& l = w.kept[u];
      auto it = std::lower_bound(l.begin(), l.end(), v);
      if (it != l.end() && *it == v) {
        EXPECT_TRUE(copies[u]->t.SetNeighbourLeafGradient(static_cast<uint32_t>(it - l.begin()),
                                                          Span<const double>(pool))
                        .ok());
      }
    }
  }
  for (auto& c : copies) EXPECT_TRUE(c->t.Backward(Span<const double>(pd), Span<double>(g)).ok());
  return g;
}

std::vector<float> RandomParams(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.4);
  std::vector<float> p(n);
  for (float& x : p) x = static_cast<float>(normal(rng));
  return p;
}

void RunFederation(bool paper) {
  const World w;
  Server s(w);
  s.Setup(paper);
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
    EXPECT_EQ(s[v].role.workload(), w.kept[v].size());
    uint32_t keepers = 0;
    for (uint32_t u = 0; u < w.n; ++u) keepers += std::count(w.kept[u].begin(), w.kept[u].end(), v) ? 1 : 0;
    EXPECT_EQ(s[v].role.keepers(), keepers) << v;
    // The ledger holds the feature release before anything left.
    EXPECT_GT(s[v].ledger.phase_epsilon(kLedgerPhaseLumosFeatures), 0.0);
    EXPECT_EQ(s[v].ledger.unbounded(), paper) << v;
  }
  const size_t total = Params(TrainPhase::kEpoch, paper, 1).parameters;
  const std::vector<float> params = RandomParams(total, 9);
  s.Epoch(paper, 1, params);
  std::vector<double> sum(total, 0.0);
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 2}), 1u) << v;
    ASSERT_EQ(s.metrics.count(v), 1u) << v;
    ASSERT_EQ(s.gradients[v].size(), total) << v;
    for (size_t i = 0; i < total; ++i) sum[i] += s.gradients[v][i];
    const TrainMetrics& m = s.metrics[v];
    EXPECT_EQ(m.epoch, 1u);
    EXPECT_EQ(m.labelled, s[v].role.training_label() >= 0);
    EXPECT_EQ(m.trained, m.labelled && v % 3 != 2);
  }
  const std::vector<double> want = ExpectedGradient(w, s, params, paper);
  double scale = 1e-3;
  for (double g : want) scale = std::max(scale, std::fabs(g));
  for (size_t i = 0; i < total; ++i) EXPECT_NEAR(sum[i], want[i], 1e-4 * scale) << "parameter " << i;
  // An evaluation epoch: metrics, no gradient records.
  s.gradients.clear();
  s.Epoch(paper, 2, params, /*train=*/false);
  for (uint32_t v = 0; v < w.n; ++v) {
    EXPECT_EQ(s.reports.count({v, 3}), 1u) << v;
    EXPECT_EQ(s.metrics[v].epoch, 2u);
    EXPECT_FALSE(s.metrics[v].trained);
  }
  EXPECT_TRUE(s.gradients.empty());
  for (uint32_t v = 0; v < w.n; ++v) s.JobStart(v, 4, Encoded(Params(TrainPhase::kReport, paper)));
  s.Pump();
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.summaries.count(v), 1u) << v;
    EXPECT_EQ(s.summaries[v].epochs, 1u);
    EXPECT_EQ(s.summaries[v].rejected, 0u);
    EXPECT_TRUE(s[v].role.finished());
  }
}

TEST(LumosTrainRoleTest, StrictFederationUploadsTheFederationsGradient) { RunFederation(false); }
TEST(LumosTrainRoleTest, PaperFederationUploadsTheFederationsGradient) { RunFederation(true); }

// The hub's keys come last: every neighbour's notice reaches it before it
// can open them (as on a busy server), and must be held, not dropped.
TEST(LumosTrainRoleTest, NoticesThatArriveBeforeTheKeysAreHeldUntilTheKeysCome) {
  const World w;
  Server s(w);
  s.hold_keys_for = {2};
  for (uint32_t v = 0; v < w.n; ++v) {
    s.JobStart(v, 1, Encoded(Params(TrainPhase::kSetup, false)));
    s.Data(v, 1, kTrainAssignment, {0});
  }
  s.Pump();
  EXPECT_EQ(s.reports.count({2, 1}), 0u);  // still waiting for its keys
  s.ReleaseKeys();
  s.Pump();
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
  }
  EXPECT_EQ(s[2].role.stats().rejected, 0u);
}

TEST(LumosTrainRoleTest, StrictModeSpendsExactlyTheFeatureAndLabelBudgetsAndNothingUnbounded) {
  const World w;
  Server s(w);
  s.Setup(false);
  for (uint32_t v = 0; v < w.n; ++v) {
    EXPECT_NEAR(s[v].ledger.phase_epsilon(kLedgerPhaseLumosFeatures), 2.0, 1e-9) << v;  // the union of receivers
    EXPECT_NEAR(s[v].ledger.phase_epsilon(kLedgerPhaseLumosLabel), w.labels[v] >= 0 ? 2.0 : 0.0, 1e-9) << v;
    EXPECT_FALSE(s[v].ledger.unbounded());
  }
}

TEST(LumosTrainRoleTest, PaperModeIsRefusedByABudgetWithoutUnboundedReleases) {
  const World w;
  Server s(w, true, PrivacyBudget());  // the default: no unbounded releases
  s.Setup(true);
  // Every device refuses: the labelled ones' labels and every device's raw
  // features would leave unbounded. Their notices say so, so nobody waits.
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, static_cast<uint32_t>(StatusCode::kPermissionDenied)) << v;
    EXPECT_TRUE(s[v].role.finished());
    EXPECT_FALSE(s[v].ledger.unbounded());  // nothing recorded, nothing released
  }
}

TEST(LumosTrainRoleTest, ADeviceWithoutATrimmingResultRefuses) {
  const World w;
  Server s(w, true, PrivacyBudget::Unlimited(), {3});
  s.Setup(false);
  ASSERT_EQ(s.reports.count({3, 1}), 1u);
  EXPECT_EQ(s.reports.at({3, 1}).code, static_cast<uint32_t>(StatusCode::kFailedPrecondition));
  // The others go on without it: their setup completes.
  for (uint32_t v : {0u, 1u, 2u, 4u, 5u}) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
  }
  const std::vector<float> params = RandomParams(Params(TrainPhase::kEpoch, false, 1).parameters, 4);
  s.Epoch(false, 1, params);
  for (uint32_t v : {0u, 1u, 2u, 4u, 5u}) EXPECT_EQ(s.reports.count({v, 2}), 1u) << v;
}

// k-ary randomised response at eps = 2 with k = 4: the label survives with
// probability e^2 / (e^2 + 3) = 0.711, each other label 0.096. 20,000 draws:
// chi-square with 3 degrees of freedom below 16.3 (p = 0.001); the wrong
// budget (eps = 1) is rejected.
TEST(LumosTrainRoleTest, RandomisedResponseKeepsTheLabelAtItsRate) {
  auto chi_square = [](double eps_drawn, double eps_expected) {
    Drbg noise;
    EXPECT_TRUE(noise.SeedDeterministic(81).ok());
    std::vector<int> counts(4, 0);
    constexpr int kDraws = 20000;
    for (int i = 0; i < kDraws; ++i) {
      Result<uint32_t> r = RandomisedResponse(noise, 2, 4, eps_drawn);
      EXPECT_TRUE(r.ok());
      ++counts[*r];
    }
    const double e = std::exp(eps_expected);
    double chi = 0;
    for (uint32_t l = 0; l < 4; ++l) {
      const double p = l == 2 ? e / (e + 3) : 1 / (e + 3);
      chi += (counts[l] - kDraws * p) * (counts[l] - kDraws * p) / (kDraws * p);
    }
    return chi;
  };
  EXPECT_LT(chi_square(2.0, 2.0), 16.3);
  EXPECT_GT(chi_square(1.0, 2.0), 16.3);
  Drbg noise;
  ASSERT_TRUE(noise.SeedDeterministic(1).ok());
  EXPECT_FALSE(RandomisedResponse(noise, 4, 4, 2.0).ok());
  EXPECT_FALSE(RandomisedResponse(noise, 0, 4, 0.0).ok());
  EXPECT_EQ(*RandomisedResponse(noise, 0, 1, 2.0), 0u);
}

TEST(LumosTrainFormatTest, ParametersRoundTripWithEveryFieldIntact) {
  TrainParameters p = Params(TrainPhase::kEpoch, true, 0xA1B2C3D4u, false);
  p.ego_star = true;
  p.layer = 2;
  for (int i = 0; i < 16; ++i) p.salt[i] = static_cast<uint8_t>(0xF0 + i);
  p.label_epsilon = 0.75f;
  const std::vector<uint8_t> bytes = Encoded(p);
  Result<TrainParameters> q = DecodeTrainParameters(bytes);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->epoch, 0xA1B2C3D4u);
  EXPECT_EQ(std::vector<uint8_t>(q->salt, q->salt + 16), std::vector<uint8_t>(p.salt, p.salt + 16));
  EXPECT_TRUE(q->paper);
  EXPECT_TRUE(q->ego_star);
  EXPECT_FALSE(q->train);
  EXPECT_EQ(q->layer, 2);
  EXPECT_FLOAT_EQ(q->label_epsilon, 0.75f);
  EXPECT_EQ(q->parameters, p.parameters);
  std::vector<uint8_t> bad = bytes;
  bad[3] = 3;  // no such layer
  EXPECT_FALSE(DecodeTrainParameters(bad).ok());
  bad = bytes;
  bad.pop_back();
  EXPECT_FALSE(DecodeTrainParameters(bad).ok());
  TrainMetrics m;
  m.epoch = 3;
  m.split = 1;
  m.labelled = true;
  m.correct = true;
  m.pool = 7;
  m.loss = 0.25;
  uint8_t mb[kTrainMetricsBytes];
  ASSERT_TRUE(EncodeTrainMetrics(m, ByteSpan(mb)).ok());
  Result<TrainMetrics> mm = DecodeTrainMetrics(ConstByteSpan(mb));
  ASSERT_TRUE(mm.ok());
  EXPECT_EQ(mm->pool, 7u);
  EXPECT_TRUE(mm->correct);
  EXPECT_DOUBLE_EQ(mm->loss, 0.25);
  mb[5] = 4;  // correct without labelled
  EXPECT_FALSE(DecodeTrainMetrics(ConstByteSpan(mb)).ok());
}

}  // namespace
}  // namespace nodefl::lumos
