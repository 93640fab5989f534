// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Lumos training with secure sum (lumos_secure_sum; train_format.h,
// lumos_train_job.h) in one process, without TLS: the server's
// LumosTrainJob against real DeviceSessions running LumosTrainRole (the
// role tests' devices, tests/sdk/lumos_train_harness.h), joined by an
// in-order network that also answers key requests and relays sealed
// messages as the server does. The same world runs twice with the same
// seeds, once plain and once through secure aggregation: the secure epoch's
// mean gradient (what Adam steps with) must equal the plain one within the
// fixed-point code's tolerance, n / (2 scale) per summed value, and its
// counts must be the plain epoch's exactly. A device that cannot join an
// aggregation is that epoch's straggler and the sum leaves exactly its
// contribution out; an aggregation nobody can join updates nothing and the
// job still ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "lumos_train_harness.h"
#include "scripted_key_directory.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/jobs/lumos_train_job.h"
#include "nodefl/server/lumos/training/splits.h"

namespace nodefl::lumos {
namespace {

namespace jobs = server::jobs;
namespace sl = server::lumos;
using train_harness::Device;
using train_harness::kJob;
using train_harness::World;

constexpr uint32_t kDeadlineMs = 1000;

// A random world of n devices: edges with probability p, who keeps each,
// binary features (d = 12, as the harness's devices expect), 3 classes and
// a few unlabelled nodes.
World RandomWorld(uint32_t n, double p, uint64_t seed) {
  World w;
  w.n = n;
  w.edges.clear();
  w.keeper.clear();
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution edge(p), coin(0.3), unlabelled(0.15);
  std::uniform_int_distribution<int> keeper(0, 2), label(0, 2);
  for (uint32_t a = 0; a < n; ++a) {
    for (uint32_t b = a + 1; b < n; ++b) {
      if (!edge(rng)) continue;
      w.edges.push_back({a, b});
      w.keeper.push_back(keeper(rng));
    }
  }
  w.adj.assign(n, {});
  w.kept.assign(n, {});
  for (size_t e = 0; e < w.edges.size(); ++e) {
    const auto [a, b] = w.edges[e];
    w.adj[a].push_back(b);
    w.adj[b].push_back(a);
    if (w.keeper[e] == 0 || w.keeper[e] == 2) w.kept[a].push_back(b);
    if (w.keeper[e] == 1 || w.keeper[e] == 2) w.kept[b].push_back(a);
  }
  for (auto& l : w.adj) std::sort(l.begin(), l.end());
  for (auto& l : w.kept) std::sort(l.begin(), l.end());
  w.features.assign(n, std::vector<float>(w.d));
  for (auto& f : w.features) {
    for (float& x : f) x = coin(rng) ? 1.0f : 0.0f;
  }
  w.labels.resize(n);
  for (int32_t& l : w.labels) l = unlabelled(rng) ? -1 : label(rng);
  return w;
}

jobs::LumosTrainOptions Options(bool secure, nodefl::lumos::TrainTask task = TrainTask::kNode) {
  jobs::LumosTrainOptions o;
  o.job_id = kJob;
  o.shape.features = 12;
  o.shape.hidden = 8;
  o.shape.out = 4;
  o.shape.classes = task == TrainTask::kLink ? 0 : 3;
  o.shape.dropout = 0.0f;
  o.epochs = 1;
  o.seed = 7;
  o.split_seed = 3;
  o.task = task;
  o.negatives = train_harness::kNegatives;
  o.eval_negatives = train_harness::kEvalNegatives;
  o.edge_seed = train_harness::kEdgeSeed;
  o.round_deadline_ms = kDeadlineMs;
  o.epoch_deadline_ms = kDeadlineMs;
  o.secure_sum = secure;
  return o;
}

// The job and the devices, joined in order: each device's frames from the
// server in order, relayed messages in the order sent, uploads handed to
// the job as they are written. The clock moves only when nothing moves, so
// that only a real stall reaches a deadline.
class Bridge {
 public:
  Bridge(const World& w, const jobs::LumosTrainOptions& o, std::map<uint32_t, uint32_t> secure_peers = {})
      : w_(w), train_epochs_(o.epochs), job_(o, Ids(w.n)) {
    // Every id is "known": one >= n never announces a job key, so a request
    // for it waits (no found = false answer).
    directory_.rules.certificate_der = [this](uint32_t id) -> ConstByteSpan { return devices_[id]->certificate_der(); };
    for (uint32_t v = 0; v < w.n; ++v) {
      const uint32_t peers = secure_peers.count(v) ? secure_peers[v] : train_harness::kSecureSumPeers;
      devices_.push_back(std::make_unique<Device>(w, v, true, PrivacyBudget::Unlimited(), peers));
      inbox_.emplace_back();
      seq_.push_back(0);
      Device& d = *devices_.back();
      EXPECT_TRUE(d.session.Start(now_).ok());
      d.session.ConsumeOutput(d.session.PendingOutput().size());  // Hello
      auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
      e.body.welcome.resume_token.size = 32;
      std::memset(e.body.welcome.resume_token.bytes, 0x33, 32);
      Feed(v, ::nodefl::testing::FrameTo(e, ++seq_[v]));
    }
  }

  // Runs the job to its end; false if it stalled.
  bool Run() {
    Dispatch(job_.Begin(now_));
    for (int quiet = 0; !job_.finished() && quiet < 50;) {
      if (Step()) {
        quiet = 0;
        continue;
      }
      ++quiet;
      now_ += uint64_t{kDeadlineMs} * 1000 + 1;
      Dispatch(job_.Poll(now_));
    }
    return job_.finished();
  }

  // With the first training epoch's start, `to` also gets a relayed message
  // from an id that is no device (sealed under no key it will ever hold).
  void ForgeDeliveryInFirstEpoch(uint32_t to) { forged_to_ = to; }

  const jobs::LumosTrainJob& job() const { return job_; }
  Device& device(uint32_t v) { return *devices_[v]; }
  // Plain runs: each device's gradient contribution and metrics in the
  // (single) training epoch, as uploaded.
  const std::map<uint32_t, std::vector<float>>& gradients() const { return gradients_; }
  const std::map<uint32_t, TrainMetrics>& metrics() const { return metrics_; }
  // Gradient or metrics records written in a training epoch's round.
  uint64_t plain_training_records() const { return plain_training_records_; }
  uint64_t aggregation_records() const { return aggregation_records_; }

 private:
  static std::vector<uint32_t> Ids(uint32_t n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }
  bool TrainingRound(uint32_t round) const { return round >= 2 && round <= 1 + train_epochs_; }

  void Send(uint32_t to, nodefl_wire_Envelope e) { inbox_[to].push_back(::nodefl::testing::FrameTo(e, ++seq_[to])); }

  void Dispatch(const std::vector<jobs::RoundStart>& starts) {
    for (const jobs::RoundStart& s : starts) {
      for (uint32_t v : s.devices) {
        auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, kJob, s.round);
        e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN;
        e.body.job_start.deadline_ms = s.deadline_ms;
        std::memcpy(e.body.job_start.parameters.bytes, s.parameters.data(), s.parameters.size());
        e.body.job_start.parameters.size = static_cast<pb_size_t>(s.parameters.size());
        Send(v, e);
      }
    }
    for (const jobs::DeviceData& d : job_.TakeData()) {
      auto e = ::nodefl::testing::AddressedEnvelope(nodefl_wire_Envelope_job_data_tag, kJob, d.round);
      e.body.job_data.kind = d.kind;
      ASSERT_LE(d.bytes.size(), sizeof(e.body.job_data.data.bytes));
      std::memcpy(e.body.job_data.data.bytes, d.bytes.data(), d.bytes.size());
      e.body.job_data.data.size = static_cast<pb_size_t>(d.bytes.size());
      Send(d.device, e);
    }
    for (const jobs::RoundStart& s : starts) {
      if (s.round != 2 || forged_to_ >= w_.n) continue;
      const std::vector<uint8_t> sealed(120, 0x5a);
      Send(forged_to_, directory_.Deliver(w_.n + 7, forged_to_, ConstByteSpan(sealed), kJob, s.round));
      forged_to_ = w_.n;
    }
  }

  bool Step() {
    bool moved = false;
    for (uint32_t v = 0; v < w_.n; ++v) {
      while (!inbox_[v].empty()) {
        std::vector<uint8_t> f = std::move(inbox_[v].front());
        inbox_[v].pop_front();
        Feed(v, f);
        moved = true;
      }
    }
    for (uint32_t v = 0; v < w_.n; ++v) {
      Device& d = *devices_[v];
      EXPECT_TRUE(d.session.Poll(now_).ok());
      if (!d.session.PendingOutput().empty()) moved = true;
      Collect(v);
    }
    return moved;
  }

  void Feed(uint32_t v, const std::vector<uint8_t>& frame) {
    Device& d = *devices_[v];
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      ASSERT_TRUE(d.session.OnReceived(ConstByteSpan(frame).subspan(pos), now_, &consumed).ok());
      pos += consumed;
      Collect(v);
    }
  }

  void Collect(uint32_t v) {
    ::nodefl::testing::DrainSessionOutput(devices_[v]->session, [&](const nodefl_wire_Envelope& e) { Handle(v, e); });
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
        ASSERT_LT(r.dst, w_.n);
        Send(r.dst, directory_.Deliver(from, r, kJob, e.round));
        break;
      }
      case nodefl_wire_Envelope_job_data_tag: {
        const nodefl_wire_JobData& j = e.body.job_data;
        std::vector<uint8_t> bytes(j.data.bytes, j.data.bytes + j.data.size);
        Record(from, e.round, j.kind, bytes);
        Dispatch(job_.OnUpload(from, e.round, j.kind, std::move(bytes), now_));
        break;
      }
      case nodefl_wire_Envelope_job_report_tag:
        Dispatch(job_.OnReport(from, e.round, e.body.job_report, now_));
        break;
      default:
        break;
    }
  }

  // What the server is shown, by kind: the plain contributions (kept for
  // the expected sums) and the aggregation's records (counted).
  void Record(uint32_t from, uint32_t round, uint32_t kind, const std::vector<uint8_t>& bytes) {
    if (secagg::IsAggregationKind(kind)) {
      ++aggregation_records_;
      return;
    }
    if (!TrainingRound(round) || (kind != kTrainGradient && kind != kTrainMetrics)) return;
    ++plain_training_records_;
    if (kind == kTrainMetrics) {
      Result<TrainMetrics> m = DecodeTrainMetrics(ConstByteSpan(bytes));
      ASSERT_TRUE(m.ok());
      metrics_[from] = *m;
      return;
    }
    const uint32_t first = LoadU32Le(bytes.data());
    std::vector<float>& g = gradients_[from];
    for (size_t i = 0; 4 + 4 * i < bytes.size(); ++i) {
      if (g.size() <= first + i) g.resize(first + i + 1, 0.0f);
      g[first + i] = LoadF32Le(bytes.data() + 4 + 4 * i);
    }
  }

  void AnswerKeyRequests() {
    directory_.Answer(kJob, [&](uint32_t to, const nodefl_wire_Envelope& c) { Send(to, c); });
  }

  const World& w_;
  uint32_t train_epochs_;
  uint64_t now_ = 5'000;
  jobs::LumosTrainJob job_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::deque<std::vector<uint8_t>>> inbox_;
  std::vector<uint64_t> seq_;
  ::nodefl::testing::ScriptedKeyDirectory directory_;  // nodefl-server's key directory and relay
  std::map<uint32_t, std::vector<float>> gradients_;
  std::map<uint32_t, TrainMetrics> metrics_;
  uint64_t plain_training_records_ = 0;
  uint64_t aggregation_records_ = 0;
  uint32_t forged_to_ = UINT32_MAX;
};

// The code's scale the job must pick for n devices (independently of it):
// the largest power of two with n * round(clip * scale) < 2^31.
double ScaleFor(float clip, size_t n) {
  for (int k = 30;; --k) {
    secagg::FixedPoint code;
    code.clip = clip;
    code.scale = static_cast<float>(std::ldexp(1.0, k));
    if (secagg::MaxSummands(code) >= n) return code.scale;
  }
}

// The plain run's devices' contributions, summed over `included` (in
// double) and divided by the losses (node) or loss terms (link) they took:
// the mean gradient Adam must have stepped with; and the same mean of
// their magnitudes (float32's rounding of a sum is relative to it).
struct Mean {
  std::vector<double> value, magnitude;
};
Mean ExpectedMean(const Bridge& plain, const std::set<uint32_t>& included, size_t total, bool link) {
  Mean mean{std::vector<double>(total, 0.0), std::vector<double>(total, 0.0)};
  uint64_t divisor = 0;
  for (uint32_t v : included) {
    auto g = plain.gradients().find(v);
    if (g != plain.gradients().end()) {
      for (size_t i = 0; i < g->second.size() && i < total; ++i) {
        mean.value[i] += g->second[i];
        mean.magnitude[i] += std::fabs(g->second[i]);
      }
    }
    const TrainMetrics& m = plain.metrics().at(v);
    if (m.trained) divisor += link ? m.terms : 1;
  }
  EXPECT_GT(divisor, 0u);
  for (size_t i = 0; i < total; ++i) {
    mean.value[i] /= static_cast<double>(divisor);
    mean.magnitude[i] /= static_cast<double>(divisor);
  }
  return mean;
}

// Every value of the secure mean within n / (2 scale) / divisor of the
// plain one (the code's rounding, n = `devices`), plus float32's rounding
// of a sum of 16 values.
void ExpectWithinCode(const std::vector<float>& got, const Mean& expected, size_t devices, double scale,
                      uint64_t divisor) {
  ASSERT_EQ(got.size(), expected.value.size());
  const double code = static_cast<double>(devices) / (2.0 * scale) / static_cast<double>(divisor);
  size_t nonzero = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tolerance = code + 2e-6 * expected.magnitude[i] + 1e-12;
    ASSERT_NEAR(got[i], expected.value[i], tolerance) << "value " << i << " of " << got.size();
    nonzero += expected.value[i] != 0.0 ? 1 : 0;
  }
  EXPECT_GT(nonzero, got.size() / 4);  // a gradient, not zeros that match trivially
}

void ExpectSecureEpoch(const jobs::LumosTrainEpoch& e) {
  EXPECT_TRUE(e.train);
  EXPECT_TRUE(e.updated);
  EXPECT_EQ(e.aggregation, "done");
  EXPECT_EQ(e.clipped, 0u);  // the comparison holds only for unclipped values
  EXPECT_GT(e.peer_bytes, 0u);
}

TEST(LumosTrainSecureSumTest, TheSecureEpochStepsWithThePlainEpochsMeanGradient) {
  const World w = RandomWorld(16, 0.3, 11);
  Bridge plain(w, Options(false));
  ASSERT_TRUE(plain.Run());
  Bridge secure(w, Options(true));
  ASSERT_TRUE(secure.Run());
  ASSERT_TRUE(plain.job().succeeded()) << plain.job().summary().error;
  ASSERT_TRUE(secure.job().succeeded()) << secure.job().summary().error;

  // The server saw no device's gradient or metrics in the training epoch,
  // only the aggregation.
  EXPECT_GT(plain.plain_training_records(), 0u);
  EXPECT_EQ(secure.plain_training_records(), 0u);
  EXPECT_GT(secure.aggregation_records(), 0u);
  EXPECT_EQ(secure.job().summary().aggregations_done, 1u);
  EXPECT_EQ(secure.job().summary().aggregations_aborted, 0u);
  EXPECT_EQ(secure.job().summary().protocol_errors, 0u);

  const jobs::LumosTrainEpoch& p = plain.job().epochs().at(0);
  const jobs::LumosTrainEpoch& s = secure.job().epochs().at(0);
  ExpectSecureEpoch(s);
  EXPECT_EQ(s.done, w.n);
  EXPECT_EQ(s.stragglers, 0u);
  // The counts are exact; the losses within the loss code's rounding.
  ASSERT_GT(p.trained, 0u);
  EXPECT_EQ(s.trained, p.trained);
  for (int split = 0; split < sl::kSplits; ++split) {
    EXPECT_EQ(s.labelled[split], p.labelled[split]) << split;
    EXPECT_DOUBLE_EQ(s.accuracy[split], p.accuracy[split]) << split;
  }
  const double loss_code = w.n / (2.0 * ScaleFor(kTrainSecureLossClip, w.n));
  EXPECT_NEAR(s.loss, p.loss, loss_code / p.trained + 1e-5);
  EXPECT_NEAR(s.validation_loss, p.validation_loss, loss_code / std::max(1u, p.labelled[1]) + 1e-5);

  std::set<uint32_t> everyone;
  for (uint32_t v = 0; v < w.n; ++v) everyone.insert(v);
  const size_t total = plain.job().layout().total;
  ExpectWithinCode(secure.job().last_mean_gradient(), ExpectedMean(plain, everyone, total, false), w.n,
                   ScaleFor(Options(true).secure_clip, w.n), p.trained);
  // And the job's own plain mean is the same sum (a check on the harness).
  ExpectWithinCode(plain.job().last_mean_gradient(), ExpectedMean(plain, everyone, total, false), 0, 1, 1);
}

TEST(LumosTrainSecureSumTest, LinkTrainingDividesTheSecureSumByTheSummedLossTerms) {
  const World w = RandomWorld(16, 0.35, 5);
  Bridge plain(w, Options(false, TrainTask::kLink));
  ASSERT_TRUE(plain.Run());
  Bridge secure(w, Options(true, TrainTask::kLink));
  ASSERT_TRUE(secure.Run());
  ASSERT_TRUE(secure.job().succeeded()) << secure.job().summary().error;
  EXPECT_EQ(secure.plain_training_records(), 0u);

  const jobs::LumosTrainEpoch& p = plain.job().epochs().at(0);
  const jobs::LumosTrainEpoch& s = secure.job().epochs().at(0);
  ExpectSecureEpoch(s);
  EXPECT_EQ(s.trained, p.trained);
  ASSERT_GT(p.terms, 0u);
  EXPECT_EQ(s.terms, p.terms);
  // The scores are still uploaded per device and ranked alike.
  EXPECT_EQ(s.positives[1], p.positives[1]);
  EXPECT_EQ(s.positives[2], p.positives[2]);
  EXPECT_EQ(s.negatives, p.negatives);
  EXPECT_TRUE((std::isnan(s.auc[2]) && std::isnan(p.auc[2])) || s.auc[2] == p.auc[2]);

  std::set<uint32_t> everyone;
  for (uint32_t v = 0; v < w.n; ++v) everyone.insert(v);
  ExpectWithinCode(secure.job().last_mean_gradient(),
                   ExpectedMean(plain, everyone, plain.job().layout().total, true), w.n,
                   ScaleFor(Options(true).secure_clip, w.n), p.terms);
}

// A relayed message from nobody's id waits in a held slot (its sender might
// still turn out to be a mask peer whose key is on its way); once the next
// aggregation's peers are known without it, the slot is freed and the
// message counted as rejected, rather than pinned until the job ends.
TEST(LumosTrainSecureSumTest, AHeldMessageFromNoMaskPeerIsDroppedAnAggregationLater) {
  const World w = RandomWorld(12, 0.3, 13);
  jobs::LumosTrainOptions o = Options(true);
  o.epochs = 3;
  Bridge secure(w, o);
  secure.ForgeDeliveryInFirstEpoch(0);
  ASSERT_TRUE(secure.Run());
  ASSERT_TRUE(secure.job().succeeded()) << secure.job().summary().error;
  EXPECT_EQ(secure.job().summary().aggregations_done, 3u);
  const LumosTrainRole::Stats s = secure.device(0).role.stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.held_dropped, 0u);
  EXPECT_EQ(s.aggregations, 3u);
  for (uint32_t v = 1; v < w.n; ++v) EXPECT_EQ(secure.device(v).role.stats().rejected, 0u) << v;
}

// Device 4 has room for one mask peer and gets more: its client refuses
// the aggregation, the others finish it, and the sum is theirs.
TEST(LumosTrainSecureSumTest, ADeviceThatCannotJoinStragglesAndTheSumLeavesItOut) {
  const World w = RandomWorld(16, 0.3, 11);
  constexpr uint32_t kCramped = 4;
  Bridge plain(w, Options(false));
  ASSERT_TRUE(plain.Run());
  Bridge secure(w, Options(true), {{kCramped, 1}});
  ASSERT_TRUE(secure.Run());
  ASSERT_TRUE(secure.job().succeeded()) << secure.job().summary().error;

  const jobs::LumosTrainEpoch& s = secure.job().epochs().at(0);
  ExpectSecureEpoch(s);
  EXPECT_EQ(s.done, w.n - 1);
  EXPECT_EQ(s.stragglers, 1u);
  const secagg::AggregationClient* client = secure.device(kCramped).role.aggregation_client();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->refusal().code(), StatusCode::kResourceExhausted);

  std::set<uint32_t> others;
  uint32_t trained = 0;
  for (uint32_t v = 0; v < w.n; ++v) {
    if (v == kCramped) continue;
    others.insert(v);
    trained += plain.metrics().at(v).trained ? 1 : 0;
  }
  EXPECT_EQ(s.trained, trained);
  ExpectWithinCode(secure.job().last_mean_gradient(),
                   ExpectedMean(plain, others, plain.job().layout().total, false), w.n,
                   ScaleFor(Options(true).secure_clip, w.n), trained);
}

// Nobody has room: every aggregation aborts, no epoch updates, the job
// still ends (unsucceeded) and says why.
TEST(LumosTrainSecureSumTest, AnAggregationNobodyCanJoinUpdatesNothingAndTheJobEnds) {
  const World w = RandomWorld(8, 0.4, 2);
  std::map<uint32_t, uint32_t> cramped;
  for (uint32_t v = 0; v < w.n; ++v) cramped[v] = 1;
  jobs::LumosTrainOptions o = Options(true);
  o.epochs = 2;
  Bridge secure(w, o, cramped);
  ASSERT_TRUE(secure.Run());
  EXPECT_FALSE(secure.job().succeeded());
  const jobs::LumosTrainSummary& s = secure.job().summary();
  EXPECT_EQ(s.epochs_updated, 0u);
  EXPECT_EQ(s.aggregations_done, 0u);
  EXPECT_EQ(s.aggregations_aborted, 2u);
  ASSERT_EQ(secure.job().epochs().size(), 3u);  // two training epochs and the evaluation
  for (int e = 0; e < 2; ++e) {
    EXPECT_FALSE(secure.job().epochs()[e].updated);
    EXPECT_EQ(secure.job().epochs()[e].aggregation.rfind("aborted", 0), 0u) << secure.job().epochs()[e].aggregation;
    EXPECT_EQ(secure.job().epochs()[e].done, 0u);
  }
  EXPECT_TRUE(secure.job().last_mean_gradient().empty());
  // The evaluation epoch runs as without secure sum.
  EXPECT_EQ(secure.job().epochs()[2].done, w.n);
}

}  // namespace
}  // namespace nodefl::lumos
