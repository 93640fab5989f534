// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosTrainRole on the link task (Lumos Sec. VI-C, Eq. 33 with the sign
// fixed; contract: protocol/lumos/train_format.h): the trees hold only kept
// training edges, partners the server drew are keyed and noticed (a drawn
// neighbour and the device itself are skipped), pooled embeddings and their
// gradients cross between neighbours and partners, and the uploaded
// contributions add up to the gradient of the federation's link loss
// computed here independently from the same trees. Held-out edges and
// evaluation partners are scored once, at the lower id, in the right bin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "lumos_train_harness.h"
#include "nodefl/gnn/losses.h"

namespace nodefl::lumos {
namespace {

using namespace train_harness;  // NOLINT: the harness is this test's vocabulary

// (a, b, use): 0 training negative, 1 evaluation negative. (2, 3) is an edge
// and (4, 4) the device itself: both skipped by the devices.
const std::vector<std::tuple<uint32_t, uint32_t, uint8_t>> kPartners = {
    {0, 3, 0}, {0, 4, 0}, {1, 5, 0}, {2, 5, 0}, {1, 3, 1}, {3, 5, 1}, {0, 5, 1}, {2, 3, 1}, {4, 4, 0}};

bool IsEdge(const World& w, uint32_t a, uint32_t b) {
  return std::binary_search(w.adj[a].begin(), w.adj[a].end(), b);
}

// kept ∩ training edges, ascending: the neighbours with a leaf pair.
std::vector<std::vector<uint32_t>> TreeLists(const World& w) {
  std::vector<std::vector<uint32_t>> in_tree(w.n);
  for (uint32_t v = 0; v < w.n; ++v) {
    for (uint32_t u : w.kept[v]) {
      if (EdgeSplitOf(kEdgeSeed, v, u) == 0) in_tree[v].push_back(u);
    }
  }
  return in_tree;
}

std::vector<std::vector<std::pair<uint32_t, uint8_t>>> PartnerLists(const World& w) {
  std::vector<std::vector<std::pair<uint32_t, uint8_t>>> out(w.n);
  for (const auto& [a, b, use] : kPartners) {
    if (a == b || IsEdge(w, a, b)) continue;
    out[a].push_back({b, use});
    out[b].push_back({a, use});
  }
  return out;
}

struct Expected {
  std::vector<double> gradient;
  std::vector<std::vector<double>> pooled;  // per device
  std::vector<double> loss;
  std::vector<uint32_t> terms;
};

// The federation's link loss and its gradient, from the devices' own
// trees (their features as the roles hold them), without any message.
Expected ExpectedLink(const World& w, Server& s, const std::vector<float>& params) {
  const TrainParameters p = Params(TrainPhase::kEpoch, false, 1, true, TrainTask::kLink);
  gnn::ModelShape shape;
  shape.features = p.features;
  shape.hidden = p.hidden;
  shape.out = p.out;
  shape.heads = p.heads;
  shape.classes = 0;
  shape.dropout = 0.0f;
  const auto in_tree = TreeLists(w);
  const auto partners = PartnerLists(w);
  const std::vector<double> pd(params.begin(), params.end());
  auto copies = PooledCopies(s, shape, in_tree, pd);
  Expected e;
  e.gradient.assign(pd.size(), 0.0);
  e.loss.assign(w.n, 0.0);
  e.terms.assign(w.n, 0);
  const uint32_t out = p.out;
  for (uint32_t v = 0; v < w.n; ++v) {
    const auto h = copies[v]->t.pooled();
    e.pooled.push_back(std::vector<double>(h.data(), h.data() + out));
  }
  // Eq. 33 at every device, the gradients at every embedding gathered.
  std::vector<std::vector<double>> dh(w.n, std::vector<double>(out, 0.0));
  for (uint32_t v = 0; v < w.n; ++v) {
    std::vector<uint32_t> pos = in_tree[v], neg;
    for (const auto& [id, use] : partners[v]) {
      if (use == 0) neg.push_back(id);
    }
    std::vector<double> pm, nm;
    for (uint32_t id : pos) pm.insert(pm.end(), e.pooled[id].begin(), e.pooled[id].end());
    for (uint32_t id : neg) nm.insert(nm.end(), e.pooled[id].begin(), e.pooled[id].end());
    std::vector<double> du(out), dp(pm.size()), dn(nm.size());
    const auto P = static_cast<Eigen::Index>(pos.size()), Q = static_cast<Eigen::Index>(neg.size());
    const auto O = static_cast<Eigen::Index>(out);
    Result<double> loss = gnn::LinkLoss<double>(
        gnn::ConstRowMap<double>(e.pooled[v].data(), O), gnn::ConstMatrixMap<double>(pm.data(), P, O),
        gnn::ConstMatrixMap<double>(nm.data(), Q, O), gnn::RowMap<double>(du.data(), O),
        gnn::MatrixMap<double>(dp.data(), P, O), gnn::MatrixMap<double>(dn.data(), Q, O));
    EXPECT_TRUE(loss.ok());
    e.loss[v] = *loss;
    e.terms[v] = static_cast<uint32_t>(pos.size() + neg.size());
    for (uint32_t i = 0; i < out; ++i) dh[v][i] += du[i];
    for (size_t r = 0; r < pos.size(); ++r) {
      for (uint32_t i = 0; i < out; ++i) dh[pos[r]][i] += dp[r * out + i];
    }
    for (size_t r = 0; r < neg.size(); ++r) {
      for (uint32_t i = 0; i < out; ++i) dh[neg[r]][i] += dn[r * out + i];
    }
  }
  // Each embedding's gradient back to every leaf standing for it (Eq. 31).
  std::vector<double> pool(out);
  for (uint32_t v = 0; v < w.n; ++v) {
    for (uint32_t i = 0; i < out; ++i) copies[v]->t.d_pooled()(i) = dh[v][i];
    EXPECT_TRUE(copies[v]->t.PoolGradient(Span<double>(pool)).ok());
    EXPECT_TRUE(copies[v]->t.SetOwnLeafGradient(Span<const double>(pool)).ok());
    for (uint32_t u = 0; u < w.n; ++u) {
      const auto& l = in_tree[u];
      auto it = std::lower_bound(l.begin(), l.end(), v);
      if (it != l.end() && *it == v) {
        EXPECT_TRUE(copies[u]->t.SetNeighbourLeafGradient(static_cast<uint32_t>(it - l.begin()),
                                                          Span<const double>(pool))
                        .ok());
      }
    }
  }
  for (auto& c : copies) EXPECT_TRUE(c->t.Backward(Span<const double>(pd), Span<double>(e.gradient)).ok());
  return e;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(LumosTrainLinkTest, TheEdgeSplitIsOnePublicRuleOnEveryPlatform) {
  // The same values on every target (the tests run on x86-64, aarch64 and
  // armhf): both ends of an edge, and the server, must agree.
  EXPECT_EQ(EdgeSplitOf(kEdgeSeed, 1, 2), 1);
  EXPECT_EQ(EdgeSplitOf(kEdgeSeed, 3, 2), 2);
  EXPECT_EQ(EdgeSplitOf(kEdgeSeed, 2, 4), 2);
  EXPECT_EQ(EdgeSplitOf(kEdgeSeed, 0, 1), 0);
  // 80/5/15 over 200,000 pairs: each share within 4.5 standard deviations.
  uint32_t counts[3] = {0, 0, 0};
  constexpr uint32_t kPairs = 200'000;
  for (uint32_t i = 0; i < kPairs; ++i) {
    const uint32_t a = i * 7919u, b = i * 104729u + 1;
    EXPECT_EQ(EdgeSplitOf(5, a, b), EdgeSplitOf(5, b, a));
    ++counts[EdgeSplitOf(5, a, b)];
  }
  const double want[3] = {kEdgeTrainFraction, kEdgeValidationFraction,
                          1.0 - kEdgeTrainFraction - kEdgeValidationFraction};
  for (int k = 0; k < 3; ++k) {
    const double sd = std::sqrt(kPairs * want[k] * (1 - want[k]));
    EXPECT_NEAR(counts[k], kPairs * want[k], 4.5 * sd) << k;
  }
  // A different seed moves the split.
  uint32_t moved = 0;
  for (uint32_t i = 0; i < 1000; ++i) moved += EdgeSplitOf(5, i, i + 1) != EdgeSplitOf(6, i, i + 1) ? 1 : 0;
  EXPECT_GT(moved, 200u);
  EXPECT_EQ(ScoreBin(-100.0f), 0);
  EXPECT_EQ(ScoreBin(std::nanf("")), 0);
  EXPECT_EQ(ScoreBin(0.0f), 128);
  EXPECT_EQ(ScoreBin(0.124f), 128);
  EXPECT_EQ(ScoreBin(0.126f), 129);
  EXPECT_EQ(ScoreBin(15.99f), 255);
  EXPECT_EQ(ScoreBin(1e9f), 255);
}

TEST(LumosTrainLinkTest, UploadsAddUpToTheFederationsLinkGradient) {
  const World w;
  Server s(w);
  s.SetupLink(false, kPartners);
  const auto in_tree = TreeLists(w);
  const auto partners = PartnerLists(w);
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
    EXPECT_EQ(s[v].role.workload(), in_tree[v].size()) << v;
    EXPECT_EQ(s[v].role.partners(), partners[v].size()) << v;
    EXPECT_EQ(s[v].role.training_label(), -1);                    // no label in the link task
    EXPECT_EQ(s[v].ledger.phase_epsilon(kLedgerPhaseLumosLabel), 0.0);
  }
  ASSERT_LT(in_tree[2].size(), w.kept[2].size());  // the world holds out some of 2's kept edges
  const size_t total = Params(TrainPhase::kEpoch, false, 1, true, TrainTask::kLink).parameters;
  const std::vector<float> params = RandomParams(total, 13);
  s.Epoch(false, 1, params, true, TrainTask::kLink);
  const Expected e = ExpectedLink(w, s, params);
  std::vector<double> sum(total, 0.0);
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 2}), 1u) << v;
    ASSERT_EQ(s.gradients[v].size(), total) << v;
    for (size_t i = 0; i < total; ++i) sum[i] += s.gradients[v][i];
    const TrainMetrics& m = s.metrics.at(v);
    EXPECT_EQ(m.terms, e.terms[v]) << v;
    EXPECT_EQ(m.trained, e.terms[v] > 0) << v;
    EXPECT_NEAR(m.loss, e.loss[v], 1e-4 * std::max(1.0, e.loss[v])) << v;
  }
  double scale = 1e-3;
  for (double g : e.gradient) scale = std::max(scale, std::fabs(g));
  for (size_t i = 0; i < total; ++i) EXPECT_NEAR(sum[i], e.gradient[i], 1e-4 * scale) << "parameter " << i;

  // Scores: each held-out edge and evaluation pair once, at its lower id.
  for (uint32_t v = 0; v < w.n; ++v) {
    std::vector<std::pair<uint8_t, int>> want;
    for (uint32_t u : w.adj[v]) {
      const uint8_t split = EdgeSplitOf(kEdgeSeed, v, u);
      if (u > v && split != 0) want.push_back({split, ScoreBin(static_cast<float>(Dot(e.pooled[v], e.pooled[u])))});
    }
    for (const auto& [u, use] : partners[v]) {
      if (u > v && use == 1) {
        want.push_back({kScoreNegative, ScoreBin(static_cast<float>(Dot(e.pooled[v], e.pooled[u])))});
      }
    }
    const auto& got = s.scores[v];
    ASSERT_EQ(got.size(), want.size()) << v;
    for (const auto& [kind, bin] : want) {
      const bool found = std::any_of(got.begin(), got.end(), [&, k = kind, b = bin](const auto& g) {
        return g.first == k && std::abs(int{g.second} - b) <= 1;  // float vs double at a bin's edge
      });
      EXPECT_TRUE(found) << "device " << v << " kind " << int{kind} << " bin " << bin;
    }
  }
  // An evaluation epoch scores again and uploads no gradient.
  s.gradients.clear();
  s.scores.clear();
  s.Epoch(false, 2, params, false, TrainTask::kLink);
  EXPECT_TRUE(s.gradients.empty());
  size_t scored = 0;
  for (uint32_t v = 0; v < w.n; ++v) {
    EXPECT_EQ(s.reports.count({v, 3}), 1u) << v;
    EXPECT_FALSE(s.metrics.at(v).trained);
    scored += s.scores[v].size();
  }
  EXPECT_EQ(scored, 3u + 3u);  // 3 held-out edges, 3 evaluation pairs
  for (uint32_t v = 0; v < w.n; ++v) EXPECT_EQ(s[v].role.stats().rejected, 0u) << v;
}

TEST(LumosTrainLinkTest, APartnerThatRefusesIsLeftOutAndTheOthersGoOn) {
  const World w;
  Server s(w, true, PrivacyBudget::Unlimited(), {5});  // 5 has no trimming result
  s.SetupLink(false, kPartners);
  ASSERT_EQ(s.reports.count({5, 1}), 1u);
  EXPECT_EQ(s.reports.at({5, 1}).code, static_cast<uint32_t>(StatusCode::kFailedPrecondition));
  for (uint32_t v : {0u, 1u, 2u, 3u, 4u}) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, 0u) << v;
  }
  const std::vector<float> params =
      RandomParams(Params(TrainPhase::kEpoch, false, 1, true, TrainTask::kLink).parameters, 4);
  s.Epoch(false, 1, params, true, TrainTask::kLink);
  for (uint32_t v : {0u, 1u, 2u, 3u, 4u}) EXPECT_EQ(s.reports.count({v, 2}), 1u) << v;
  // 1's training partner 5 is gone: its loss has only its positives.
  const auto in_tree = TreeLists(w);
  EXPECT_EQ(s.metrics.at(1).terms, in_tree[1].size());
}

TEST(LumosTrainLinkTest, ADeviceWithoutRoomForItsPartnersRefusesTheLinkTask) {
  // Link parameters asking for more partners than the devices have room for.
  const World w;
  Server s(w);
  TrainParameters p = Params(TrainPhase::kSetup, false, 0, true, TrainTask::kLink);
  p.negatives = kNegatives + kEvalNegatives;  // + eval_negatives > capacity
  for (uint32_t v = 0; v < w.n; ++v) {
    s.JobStart(v, 1, Encoded(p));
    s.Data(v, 1, kTrainAssignment, {0});
  }
  s.Pump();
  for (uint32_t v = 0; v < w.n; ++v) {
    ASSERT_EQ(s.reports.count({v, 1}), 1u) << v;
    EXPECT_EQ(s.reports.at({v, 1}).code, static_cast<uint32_t>(StatusCode::kResourceExhausted)) << v;
  }
}

}  // namespace
}  // namespace nodefl::lumos
