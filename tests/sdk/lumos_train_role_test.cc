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
#include <limits>
#include <vector>

#include "lumos_train_harness.h"

namespace nodefl::lumos {
namespace {

using namespace train_harness;  // NOLINT: the harness is this test's vocabulary

// The federation's gradient from the devices' own trees and features,
// computed here without any message: what the uploads must add up to.
std::vector<double> ExpectedGradient(const World& w, Server& s, const std::vector<float>& params, bool paper) {
  const TrainParameters p = Params(TrainPhase::kEpoch, paper, 1, true, TrainTask::kNode, s.projection);
  gnn::ModelShape shape;
  shape.features = ModelFeatures(p);
  shape.hidden = p.hidden;
  shape.out = p.out;
  shape.heads = p.heads;
  shape.classes = p.classes;
  shape.dropout = 0.0f;
  const std::vector<double> pd(params.begin(), params.end());
  auto copies = PooledCopies(s, shape, w.kept, pd);
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

void RunFederation(bool paper, uint16_t projection = 0) {
  const World w;
  Server s(w);
  s.projection = projection;
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
  const size_t total = Params(TrainPhase::kEpoch, paper, 1, true, TrainTask::kNode, projection).parameters;
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
// 12 binary features projected to 5 dimensions: the trees see the
// projection (paper: the own leaves hold it exactly).
TEST(LumosTrainRoleTest, ProjectedFeaturesFederationUploadsTheFederationsGradient) {
  RunFederation(false, 5);
  RunFederation(true, 5);
}
// A device the server gave up on in an epoch (kTrainPeersGone): the
// devices that wait for its leaf embedding or its gradient go on without
// them and upload, rather than waiting for the epoch's deadline.
TEST(LumosTrainRoleTest, AnEpochGoesOnWithoutAPeerTheServerGaveUpOn) {
  const World w;
  Server s(w);
  s.Setup(false);
  // The device most others depend on: it keeps the most and is kept most.
  uint32_t gone = 0, best = 0;
  for (uint32_t v = 0; v < w.n; ++v) {
    uint32_t ties = static_cast<uint32_t>(w.kept[v].size());
    for (uint32_t u = 0; u < w.n; ++u) ties += std::count(w.kept[u].begin(), w.kept[u].end(), v) ? 1 : 0;
    if (ties > best) best = ties, gone = v;
  }
  ASSERT_GT(best, 0u);
  const size_t total = Params(TrainPhase::kEpoch, false, 1).parameters;
  s.Epoch(false, 1, RandomParams(total, 9), true, TrainTask::kNode, {gone});
  std::vector<uint32_t> waiting;
  for (uint32_t v = 0; v < w.n; ++v) {
    if (v != gone && s.reports.count({v, 2}) == 0) waiting.push_back(v);
  }
  ASSERT_FALSE(waiting.empty()) << "nobody depends on device " << gone << ": the test shows nothing";
  std::vector<uint8_t> notice(8);
  const auto tell = [&](uint32_t epoch) {
    StoreU32Le(epoch, notice.data());
    StoreU32Le(gone, notice.data() + 4);
    for (uint32_t v = 0; v < w.n; ++v) {
      if (v != gone) s.Data(v, 2, kTrainPeersGone, notice);
    }
    s.Pump();
  };
  tell(7);  // another epoch's notice says nothing about this one
  for (uint32_t v : waiting) EXPECT_EQ(s.reports.count({v, 2}), 0u) << v;
  tell(1);
  for (uint32_t v = 0; v < w.n; ++v) {
    if (v == gone) continue;
    ASSERT_EQ(s.reports.count({v, 2}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 2}).code, 0u) << v;
    ASSERT_EQ(s.metrics.count(v), 1u) << v;
    EXPECT_EQ(s.metrics[v].epoch, 1u);
    EXPECT_EQ(s.gradients[v].size(), total) << v;
  }
  // Only its neighbours had it to go without (others waited for them).
  uint32_t went_without = 0;
  for (uint32_t v = 0; v < w.n; ++v) {
    if (v == gone || s[v].role.stats().peers_gone == 0) continue;
    ++went_without;
    EXPECT_EQ(s[v].role.stats().peers_gone, 1u) << v;
    const bool neighbour = std::count(w.kept[v].begin(), w.kept[v].end(), gone) != 0 ||
                           std::count(w.kept[gone].begin(), w.kept[gone].end(), v) != 0;
    EXPECT_TRUE(neighbour) << v;
  }
  EXPECT_GT(went_without, 0u);
  EXPECT_EQ(s.reports.count({gone, 2}), 0u);
}

TEST(LumosTrainRoleTest, PaperOwnLeavesHoldTheProjectionOfTheFeatures) {
  const World w;
  Server s(w);
  s.projection = 5;
  s.Setup(true);
  for (uint32_t v = 0; v < w.n; ++v) {
    std::vector<float> want(5);
    ASSERT_TRUE(ProjectFeatures(0xC0FFEE, Span<const float>(w.features[v]), Span<float>(want)).ok());
    const auto h0 = s[v].role.trainer().features();
    ASSERT_EQ(h0.cols(), 5);
    const gnn::TreeNodes& at = s[v].role.trainer().nodes();
    for (uint32_t k = 0; k < at.own_leaves(); ++k) {
      for (int f = 0; f < 5; ++f) EXPECT_FLOAT_EQ(h0(at.OwnLeaf(k), f), want[f]) << v;
    }
  }
}

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

// The public projection: one rule on every platform (fixed values, from an
// independent evaluation of its definition), values in [0, 1], each
// dimension about N(0, 1) before the map, and inner products about the
// cosine of the inputs (z_u . z_v / r).
TEST(LumosTrainFormatTest, TheProjectionIsPublicAndKeepsTheFeaturesGeometry) {
  std::vector<float> x(600, 0.0f), out(4);
  for (int k : {3, 7, 11, 500}) x[k] = 1.0f;
  ASSERT_TRUE(ProjectFeatures(42, Span<const float>(x), Span<float>(out)).ok());
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 0.0f);
  EXPECT_FLOAT_EQ(out[2], 0.0f);
  EXPECT_FLOAT_EQ(out[3], -0.2f);
  std::vector<float> zero(600, 0.0f);
  ASSERT_TRUE(ProjectFeatures(42, Span<const float>(zero), Span<float>(out)).ok());
  for (float v : out) EXPECT_EQ(v, 0.0f);
  EXPECT_FALSE(ProjectFeatures(42, Span<const float>(x), Span<float>()).ok());

  // Two binary vectors of 40 ones sharing 20 (cosine 0.5), r = 4096.
  constexpr int kR = 4096;
  std::vector<float> u(1433, 0.0f), v(1433, 0.0f), pu(kR), pv(kR);
  for (int k = 0; k < 40; ++k) u[37 * k % 1433] = 1.0f;
  for (int k = 20; k < 60; ++k) v[37 * k % 1433] = 1.0f;
  ASSERT_TRUE(ProjectFeatures(9, Span<const float>(u), Span<float>(pu)).ok());
  ASSERT_TRUE(ProjectFeatures(9, Span<const float>(v), Span<float>(pv)).ok());
  double mean = 0, var = 0, dot = 0;
  for (int j = 0; j < kR; ++j) {
    ASSERT_GE(pu[j], -0.5f);
    ASSERT_LE(pu[j], 0.5f);
    const double zu = pu[j] * 2 * kProjectionClip, zv = pv[j] * 2 * kProjectionClip;
    mean += zu;
    var += zu * zu;
    dot += zu * zv;
  }
  mean /= kR;
  var = var / kR - mean * mean;
  dot /= kR;
  EXPECT_NEAR(mean, 0.0, 4.5 / std::sqrt(kR));   // the mean of r unit-variance draws
  EXPECT_NEAR(var, 0.97, 0.1);                   // N(0, 1) clipped at 2.5 keeps 0.97 of its variance
  EXPECT_NEAR(dot, 0.5, 0.1);                    // the cosine
  // Another seed, another projection.
  std::vector<float> other(kR);
  ASSERT_TRUE(ProjectFeatures(10, Span<const float>(u), Span<float>(other)).ok());
  int same = 0;
  for (int j = 0; j < kR; ++j) same += other[j] == pu[j] ? 1 : 0;
  EXPECT_LT(same, kR / 4);
}

TEST(LumosTrainFormatTest, PeersGoneRecordsRoundTripAndMalformedOnesAreRefused) {
  const uint32_t ids[] = {4, 19, 7};
  uint8_t buffer[TrainPeersGoneBytes(3)];
  Result<size_t> n = EncodeTrainPeersGone(5, Span<const uint32_t>(ids, 3), ByteSpan(buffer, sizeof(buffer)));
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, sizeof(buffer));
  const ConstByteSpan record(buffer, *n);
  Result<TrainPeersGone> gone = DecodeTrainPeersGone(record);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->epoch, 5u);
  ASSERT_EQ(gone->count, 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(TrainPeersGoneAt(record, i), ids[i]);
  // Encoding: no epoch 0, no empty record, no record past the bound, and
  // the buffer must hold it.
  EXPECT_FALSE(EncodeTrainPeersGone(0, Span<const uint32_t>(ids, 3), ByteSpan(buffer, sizeof(buffer))).ok());
  EXPECT_FALSE(EncodeTrainPeersGone(1, Span<const uint32_t>(ids, 0), ByteSpan(buffer, sizeof(buffer))).ok());
  std::vector<uint32_t> many(kTrainGoneIdsPerRecord + 1, 1);
  std::vector<uint8_t> big(TrainPeersGoneBytes(many.size()));
  EXPECT_FALSE(
      EncodeTrainPeersGone(1, Span<const uint32_t>(many.data(), many.size()), ByteSpan(big.data(), big.size())).ok());
  EXPECT_EQ(EncodeTrainPeersGone(1, Span<const uint32_t>(ids, 3), ByteSpan(buffer, sizeof(buffer) - 1)).status().code(),
            StatusCode::kResourceExhausted);
  // Decoding: a cut id, no id, epoch 0, more ids than a record holds.
  EXPECT_FALSE(DecodeTrainPeersGone(record.subspan(0, record.size() - 1)).ok());
  EXPECT_FALSE(DecodeTrainPeersGone(record.subspan(0, 4)).ok());
  uint8_t zero_epoch[8] = {0, 0, 0, 0, 1, 0, 0, 0};
  EXPECT_FALSE(DecodeTrainPeersGone(ConstByteSpan(zero_epoch, 8)).ok());
  big.assign(TrainPeersGoneBytes(kTrainGoneIdsPerRecord + 1), 1);
  EXPECT_FALSE(DecodeTrainPeersGone(ConstByteSpan(big.data(), big.size())).ok());
  big.resize(TrainPeersGoneBytes(kTrainGoneIdsPerRecord));
  EXPECT_TRUE(DecodeTrainPeersGone(ConstByteSpan(big.data(), big.size())).ok());
}

TEST(LumosTrainFormatTest, ParametersRoundTripWithEveryFieldIntact) {
  TrainParameters p = Params(TrainPhase::kEpoch, true, 0xA1B2C3D4u, false);
  p.ego_star = true;
  p.layer = 2;
  for (int i = 0; i < 16; ++i) p.salt[i] = static_cast<uint8_t>(0xF0 + i);
  p.label_epsilon = 0.75f;
  p.task = TrainTask::kLink;
  p.negatives = 7;
  p.eval_negatives = 3;
  p.edge_seed = 0x0123456789ABCDEFull;
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
  EXPECT_EQ(q->task, TrainTask::kLink);
  EXPECT_EQ(q->negatives, 7);
  EXPECT_EQ(q->eval_negatives, 3);
  EXPECT_EQ(q->edge_seed, 0x0123456789ABCDEFull);
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
  m.terms = 9;
  uint8_t mb[kTrainMetricsBytes];
  ASSERT_TRUE(EncodeTrainMetrics(m, ByteSpan(mb)).ok());
  Result<TrainMetrics> mm = DecodeTrainMetrics(ConstByteSpan(mb));
  ASSERT_TRUE(mm.ok());
  EXPECT_EQ(mm->pool, 7u);
  EXPECT_TRUE(mm->correct);
  EXPECT_DOUBLE_EQ(mm->loss, 0.25);
  EXPECT_EQ(mm->terms, 9u);
  mb[5] = 2;  // trained (the link task needs no label) ...
  EXPECT_TRUE(DecodeTrainMetrics(ConstByteSpan(mb)).ok());
  StoreU32Le(0, mb + 18);  // ... but not without terms
  EXPECT_FALSE(DecodeTrainMetrics(ConstByteSpan(mb)).ok());
  StoreU32Le(9, mb + 18);
  mb[5] = 4;  // correct without labelled
  EXPECT_FALSE(DecodeTrainMetrics(ConstByteSpan(mb)).ok());
}

// Secure sum's flag and codes travel intact; a code whose largest value
// reaches 2^31 (so that a single device's word could wrap) or a clip that
// is not a positive number is refused, and neither is looked at without
// the flag.
TEST(LumosTrainFormatTest, SecureSumCodesRoundTripAndCodesThatCouldWrapAreRefused) {
  TrainParameters p = Params(TrainPhase::kEpoch, false, 4);
  p.secure_sum = true;
  p.secure_clip = 16.0f;
  p.secure_scale_log2 = 26;  // 16 * 2^26 = 2^30
  p.secure_loss_scale_log2 = -3;
  std::vector<uint8_t> bytes = Encoded(p);
  Result<TrainParameters> q = DecodeTrainParameters(bytes);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->secure_sum);
  EXPECT_FLOAT_EQ(q->secure_clip, 16.0f);
  EXPECT_EQ(q->secure_scale_log2, 26);
  EXPECT_EQ(q->secure_loss_scale_log2, -3);
  EXPECT_EQ(bytes[2] & 16u, 16u);  // flag bit 4
  std::vector<uint8_t> bad = bytes;
  bad[75] = 27;  // 16 * 2^27 = 2^31
  EXPECT_FALSE(DecodeTrainParameters(bad).ok());
  bad = bytes;
  bad[76] = 20;  // the loss clip (4096) * 2^20 = 2^32
  EXPECT_FALSE(DecodeTrainParameters(bad).ok());
  for (float clip : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    bad = bytes;
    StoreF32Le(clip, bad.data() + 71);
    EXPECT_FALSE(DecodeTrainParameters(bad).ok()) << clip;
  }
  bad = bytes;
  bad[2] = static_cast<uint8_t>(bad[2] | 32u);  // no such flag
  EXPECT_FALSE(DecodeTrainParameters(bad).ok());
  // Without the flag the codes are not looked at.
  p.secure_sum = false;
  p.secure_clip = 0.0f;
  p.secure_scale_log2 = 100;
  bytes = Encoded(p);
  q = DecodeTrainParameters(bytes);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->secure_sum);
  EXPECT_EQ(kTrainParametersBytes, 77u);
  EXPECT_EQ(TrainSecureLength(100), 100u + kTrainSecureExtras);
}

}  // namespace
}  // namespace nodefl::lumos
