// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl_gnn: the trees of Lumos Sec. V-A, GCN against its dense
// definition, GAT's attention, and every hand-written backward pass (GCN,
// GAT, linear, ReLU + dropout inside the model, softmax cross-entropy, the
// link loss with its sign fixed, the whole two-layer model) against central
// finite differences in double precision; the dropout mask's rate
// (statistical, fixed seed); float and double agree.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "gnn_test_support.h"
#include "nodefl/gnn/dense.h"
#include "nodefl/gnn/gat.h"
#include "nodefl/gnn/gcn.h"
#include "nodefl/gnn/graph.h"
#include "nodefl/gnn/losses.h"
#include "nodefl/gnn/model.h"
#include "nodefl/random/drbg.h"

namespace nodefl::gnn {
namespace {

using ::nodefl::testing::RandomValues;
using ::nodefl::testing::ReplayRandom;

using DMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Tree {
  std::vector<uint32_t> row_begin, neighbours;
  GraphView g;
  Tree(TreeKind kind, uint32_t workload) {
    const TreeSize size = SizeOfTree(kind, workload);
    row_begin.resize(size.nodes + 1);
    neighbours.resize(size.csr_entries);
    Result<GraphView> built = BuildTree(kind, workload, Span<uint32_t>(row_begin), Span<uint32_t>(neighbours));
    EXPECT_TRUE(built.ok());
    g = *built;
  }
};

// The central difference of f at x[i], in place.
double NumericGradient(std::vector<double>& x, size_t i, const std::function<double()>& f, double eps = 1e-6) {
  const double saved = x[i];
  x[i] = saved + eps;
  const double up = f();
  x[i] = saved - eps;
  const double down = f();
  x[i] = saved;
  return (up - down) / (2 * eps);
}

// Every coordinate of `x` (or a spread sample of at most 60): analytic
// against numeric, relative to the gradient's scale.
void ExpectGradient(std::vector<double>& x, const std::vector<double>& analytic, const std::function<double()>& f,
                    const char* what) {
  ASSERT_EQ(x.size(), analytic.size());
  double scale = 1e-3;
  for (double a : analytic) scale = std::max(scale, std::fabs(a));
  const size_t step = std::max<size_t>(1, x.size() / 60);
  size_t checked = 0;
  for (size_t i = 0; i < x.size(); i += step) {
    const double numeric = NumericGradient(x, i, f);
    EXPECT_NEAR(analytic[i], numeric, 1e-6 * scale + 1e-7) << what << " coordinate " << i;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// A fixed projection of an output, so every output coordinate matters:
// loss = sum(out .* r).
double Project(ConstMatrixMap<double> out, const std::vector<double>& r) {
  double s = 0;
  for (Eigen::Index i = 0; i < out.size(); ++i) s += out.data()[i] * r[static_cast<size_t>(i)];
  return s;
}

TEST(GnnGraphTest, TheLumosTreeHasLeafPairsUnderVirtualParentsUnderARoot) {
  const Tree t(TreeKind::kLumosTree, 3);
  const TreeNodes at{TreeKind::kLumosTree, 3};
  ASSERT_EQ(t.g.nodes, 10u);
  EXPECT_EQ(t.g.neighbours.size(), 18u);  // 9 edges
  EXPECT_EQ(t.g.degree(0), 3u);           // the root
  for (uint32_t k = 0; k < 3; ++k) {
    const uint32_t parent = 1 + k;
    EXPECT_EQ(t.g.degree(parent), 3u);
    EXPECT_EQ(t.g.degree(at.OwnLeaf(k)), 1u);
    EXPECT_EQ(t.g.degree(at.NeighbourLeaf(k)), 1u);
    EXPECT_EQ(t.g.neighbours[t.g.row_begin[at.OwnLeaf(k)]], parent);
    EXPECT_EQ(t.g.neighbours[t.g.row_begin[at.NeighbourLeaf(k)]], parent);
    EXPECT_TRUE(at.IsVirtual(parent));
    EXPECT_FALSE(at.IsVirtual(at.OwnLeaf(k)));
  }
  EXPECT_EQ(at.own_leaves(), 3u);
  // Undirected: every entry has its reverse.
  for (uint32_t i = 0; i < t.g.nodes; ++i) {
    for (uint32_t e = t.g.row_begin[i]; e < t.g.row_begin[i + 1]; ++e) {
      const uint32_t j = t.g.neighbours[e];
      bool back = false;
      for (uint32_t f = t.g.row_begin[j]; f < t.g.row_begin[j + 1]; ++f) back = back || t.g.neighbours[f] == i;
      EXPECT_TRUE(back) << i << "-" << j;
    }
  }
}

TEST(GnnGraphTest, TheEgoStarAndShortSpans) {
  const Tree star(TreeKind::kEgoStar, 4);
  EXPECT_EQ(star.g.nodes, 5u);
  EXPECT_EQ(star.g.degree(0), 4u);
  EXPECT_EQ(TreeNodes({TreeKind::kEgoStar, 4}).NeighbourLeaf(2), 3u);
  const Tree empty(TreeKind::kLumosTree, 0);
  EXPECT_EQ(empty.g.nodes, 1u);
  EXPECT_EQ(empty.g.degree(0), 0u);
  std::vector<uint32_t> rows(10), cols(17);
  EXPECT_EQ(BuildTree(TreeKind::kLumosTree, 3, Span<uint32_t>(rows), Span<uint32_t>(cols)).status().code(),
            StatusCode::kResourceExhausted);
}

TEST(GnnGcnTest, ForwardIsTheSymmetricNormalisedPropagation) {
  const Tree t(TreeKind::kLumosTree, 2);
  const size_t n = t.g.nodes, in = 3, out = 4;
  std::vector<double> h = RandomValues(n * in, 1), w = RandomValues(in * out, 2), b = RandomValues(out, 3);
  std::vector<double> z(n * out), y(n * out);
  ASSERT_TRUE(GcnForward<double>(t.g, View(Span<const double>(h), n, in), View(Span<const double>(w), in, out),
                                 ConstRowMap<double>(b.data(), out), View(Span<double>(z), n, out),
                                 View(Span<double>(y), n, out))
                  .ok());
  DMatrix a = DMatrix::Identity(n, n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t e = t.g.row_begin[i]; e < t.g.row_begin[i + 1]; ++e) a(i, t.g.neighbours[e]) = 1;
  }
  Eigen::VectorXd d = a.rowwise().sum();
  const DMatrix norm = d.cwiseInverse().cwiseSqrt().asDiagonal() * a * d.cwiseInverse().cwiseSqrt().asDiagonal();
  DMatrix want = norm * Eigen::Map<const DMatrix>(h.data(), n, in) * Eigen::Map<const DMatrix>(w.data(), in, out);
  want.rowwise() += Eigen::Map<const Eigen::RowVectorXd>(b.data(), out);
  EXPECT_LT((Eigen::Map<const DMatrix>(y.data(), n, out) - want).cwiseAbs().maxCoeff(), 1e-12);
  // A wrong shape is refused, not computed.
  EXPECT_FALSE(GcnForward<double>(t.g, View(Span<const double>(h), n, in), View(Span<const double>(w), in, out),
                                  ConstRowMap<double>(b.data(), out), View(Span<double>(z), n, out),
                                  View(Span<double>(y), n - 1, out))
                   .ok());
}

TEST(GnnGcnTest, BackwardMatchesFiniteDifferences) {
  const Tree t(TreeKind::kLumosTree, 3);
  const size_t n = t.g.nodes, in = 5, out = 4;
  std::vector<double> h = RandomValues(n * in, 11), w = RandomValues(in * out, 12), b = RandomValues(out, 13);
  const std::vector<double> r = RandomValues(n * out, 14);
  std::vector<double> z(n * out), y(n * out);
  auto loss = [&] {
    EXPECT_TRUE(GcnForward<double>(t.g, View(Span<const double>(h), n, in), View(Span<const double>(w), in, out),
                                   ConstRowMap<double>(b.data(), out), View(Span<double>(z), n, out),
                                   View(Span<double>(y), n, out))
                    .ok());
    return Project(View(Span<const double>(y), n, out), r);
  };
  loss();
  std::vector<double> dz(n * out), dw(in * out, 0.0), db(out, 0.0), dh(n * in);
  MatrixMap<double> dh_map = View(Span<double>(dh), n, in);
  ASSERT_TRUE(GcnBackward<double>(t.g, View(Span<const double>(h), n, in), View(Span<const double>(w), in, out),
                                  View(Span<const double>(r), n, out), View(Span<double>(dz), n, out),
                                  View(Span<double>(dw), in, out), RowMap<double>(db.data(), out), &dh_map)
                  .ok());
  ExpectGradient(w, dw, loss, "w");
  ExpectGradient(b, db, loss, "b");
  ExpectGradient(h, dh, loss, "h");
}

struct GatSetup {
  Tree t;
  size_t n, in, out;
  uint32_t heads;
  double slope = 0.2;
  std::vector<double> h, w, as, ad, b, z, alpha, pre, scores, y;
  GatSetup(uint32_t workload, size_t in_, size_t out_, uint32_t heads_, uint64_t seed)
      : t(TreeKind::kLumosTree, workload), n(t.g.nodes), in(in_), out(out_), heads(heads_) {
    h = RandomValues(n * in, seed);
    w = RandomValues(in * out, seed + 1, 0.7);
    as = RandomValues(out, seed + 2);
    ad = RandomValues(out, seed + 3);
    b = RandomValues(out, seed + 4);
    z.resize(n * out);
    alpha.resize(t.g.entries_with_self() * heads);
    pre.resize(alpha.size());
    scores.resize(n * 2 * heads);
    y.resize(n * out);
  }
  GatParams<double> Params() const {
    return {View(Span<const double>(w), in, out), View(Span<const double>(as), heads, out / heads),
            View(Span<const double>(ad), heads, out / heads), ConstRowMap<double>(b.data(), out)};
  }
  GatCache<double> Cache() {
    return {View(Span<double>(z), n, out), View(Span<double>(alpha), t.g.entries_with_self(), heads),
            View(Span<double>(pre), t.g.entries_with_self(), heads), View(Span<double>(scores), n, 2 * heads)};
  }
  void Forward() {
    GatCache<double> c = Cache();
    EXPECT_TRUE(GatForward<double>(t.g, heads, slope, View(Span<const double>(h), n, in), Params(), c,
                                   View(Span<double>(y), n, out))
                    .ok());
  }
};

TEST(GnnGatTest, AttentionIsASoftmaxAndZeroAttentionAveragesTheNeighbourhood) {
  GatSetup s(3, 4, 8, 4, 21);
  s.Forward();
  for (uint32_t i = 0; i < s.n; ++i) {
    for (uint32_t k = 0; k < s.heads; ++k) {
      double sum = 0;
      for (uint32_t t = 0; t <= s.t.g.degree(i); ++t) sum += s.alpha[(s.t.g.row_begin[i] + i + t) * s.heads + k];
      EXPECT_NEAR(sum, 1.0, 1e-12);
    }
  }
  // With zero attention vectors every neighbour (and the node) weighs the same.
  std::fill(s.as.begin(), s.as.end(), 0.0);
  std::fill(s.ad.begin(), s.ad.end(), 0.0);
  std::fill(s.b.begin(), s.b.end(), 0.0);
  s.Forward();
  const ConstMatrixMap<double> z = View(Span<const double>(s.z), s.n, s.out);
  const ConstMatrixMap<double> y = View(Span<const double>(s.y), s.n, s.out);
  for (uint32_t i = 0; i < s.n; ++i) {
    Eigen::RowVectorXd mean = z.row(i);
    for (uint32_t e = s.t.g.row_begin[i]; e < s.t.g.row_begin[i + 1]; ++e) mean += z.row(s.t.g.neighbours[e]);
    mean /= double(s.t.g.degree(i) + 1);
    EXPECT_LT((y.row(i) - mean).cwiseAbs().maxCoeff(), 1e-12) << i;
  }
  // out not divisible by heads.
  GatSetup bad(2, 3, 6, 4, 5);
  GatCache<double> c = bad.Cache();
  EXPECT_FALSE(GatForward<double>(bad.t.g, 4, 0.2, View(Span<const double>(bad.h), bad.n, bad.in), bad.Params(), c,
                                  View(Span<double>(bad.y), bad.n, bad.out))
                   .ok());
}

TEST(GnnGatTest, BackwardMatchesFiniteDifferences) {
  for (uint32_t heads : {1u, 4u}) {
    SCOPED_TRACE(heads);
    GatSetup s(3, 5, 8, heads, 31 + heads);
    const std::vector<double> r = RandomValues(s.n * s.out, 40);
    auto loss = [&] {
      s.Forward();
      return Project(View(Span<const double>(s.y), s.n, s.out), r);
    };
    loss();
    std::vector<double> dz(s.n * s.out), dw(s.in * s.out, 0.0), das(s.out, 0.0), dad(s.out, 0.0), db(s.out, 0.0),
        dh(s.n * s.in);
    GatGrads<double> d{View(Span<double>(dw), s.in, s.out), View(Span<double>(das), heads, s.out / heads),
                       View(Span<double>(dad), heads, s.out / heads), RowMap<double>(db.data(), s.out)};
    MatrixMap<double> dh_map = View(Span<double>(dh), s.n, s.in);
    GatCache<double> c = s.Cache();
    ASSERT_TRUE(GatBackward<double>(s.t.g, heads, s.slope, View(Span<const double>(s.h), s.n, s.in), s.Params(), c,
                                    View(Span<const double>(r), s.n, s.out), View(Span<double>(dz), s.n, s.out), d,
                                    &dh_map)
                    .ok());
    ExpectGradient(s.w, dw, loss, "w");
    ExpectGradient(s.as, das, loss, "att_src");
    ExpectGradient(s.ad, dad, loss, "att_dst");
    ExpectGradient(s.b, db, loss, "b");
    ExpectGradient(s.h, dh, loss, "h");
  }
}

TEST(GnnDenseTest, LinearBackwardMatchesFiniteDifferences) {
  const size_t m = 3, in = 4, out = 5;
  std::vector<double> x = RandomValues(m * in, 51), w = RandomValues(in * out, 52), b = RandomValues(out, 53);
  const std::vector<double> r = RandomValues(m * out, 54);
  std::vector<double> y(m * out);
  auto loss = [&] {
    EXPECT_TRUE(LinearForward<double>(View(Span<const double>(x), m, in), View(Span<const double>(w), in, out),
                                      ConstRowMap<double>(b.data(), out), View(Span<double>(y), m, out))
                    .ok());
    return Project(View(Span<const double>(y), m, out), r);
  };
  loss();
  std::vector<double> dw(in * out, 0.0), db(out, 0.0), dx(m * in);
  MatrixMap<double> dx_map = View(Span<double>(dx), m, in);
  ASSERT_TRUE(LinearBackward<double>(View(Span<const double>(x), m, in), View(Span<const double>(w), in, out),
                                     View(Span<const double>(r), m, out), View(Span<double>(dw), in, out),
                                     RowMap<double>(db.data(), out), &dx_map)
                  .ok());
  ExpectGradient(w, dw, loss, "w");
  ExpectGradient(b, db, loss, "b");
  ExpectGradient(x, dx, loss, "x");
}

TEST(GnnLossTest, SoftmaxCrossEntropyAndItsGradient) {
  std::vector<double> z = {0.3, -1.2, 2.0, 0.1}, dz(4);
  Result<double> l = SoftmaxCrossEntropy<double>(ConstRowMap<double>(z.data(), 4), 2, RowMap<double>(dz.data(), 4));
  ASSERT_TRUE(l.ok());
  double norm = 0;
  for (double v : z) norm += std::exp(v);
  EXPECT_NEAR(*l, -(2.0 - std::log(norm)), 1e-12);
  std::vector<double> scratch(4);
  auto loss = [&] {
    return *SoftmaxCrossEntropy<double>(ConstRowMap<double>(z.data(), 4), 2, RowMap<double>(scratch.data(), 4));
  };
  ExpectGradient(z, dz, loss, "logits");
  EXPECT_EQ(ArgMax<double>(ConstRowMap<double>(z.data(), 4)), 2u);
  // Huge logits do not overflow.
  std::vector<double> big = {1000, -1000, 999};
  Result<double> lb = SoftmaxCrossEntropy<double>(ConstRowMap<double>(big.data(), 3), 0, RowMap<double>(dz.data(), 3));
  ASSERT_TRUE(lb.ok());
  EXPECT_NEAR(*lb, std::log1p(std::exp(-1.0)), 1e-9);
  EXPECT_FALSE(SoftmaxCrossEntropy<double>(ConstRowMap<double>(z.data(), 4), 4, RowMap<double>(dz.data(), 4)).ok());
}

TEST(GnnLossTest, TheLinkLossRewardsNeighboursAndPenalisesNegativesWithTheSignFixed) {
  const size_t d = 6;
  std::vector<double> hu = RandomValues(d, 61), pos = RandomValues(2 * d, 62), neg = RandomValues(3 * d, 63);
  std::vector<double> du(d), dpos(2 * d), dneg(3 * d);
  auto eval = [&](std::vector<double>& gu, std::vector<double>& gp, std::vector<double>& gn) {
    Result<double> l = LinkLoss<double>(ConstRowMap<double>(hu.data(), d), View(Span<const double>(pos), 2, d),
                                        View(Span<const double>(neg), 3, d), RowMap<double>(gu.data(), d),
                                        View(Span<double>(gp), 2, d), View(Span<double>(gn), 3, d));
    EXPECT_TRUE(l.ok());
    return *l;
  };
  const double l = eval(du, dpos, dneg);
  // The definition, term by term: -log sigma(x) for positives, -log sigma(-x) for negatives.
  double want = 0;
  const ConstRowMap<double> u(hu.data(), d);
  for (int r = 0; r < 2; ++r) want += std::log1p(std::exp(-u.dot(ConstRowMap<double>(pos.data() + r * d, d))));
  for (int r = 0; r < 3; ++r) want += std::log1p(std::exp(u.dot(ConstRowMap<double>(neg.data() + r * d, d))));
  EXPECT_NEAR(l, want, 1e-12);
  std::vector<double> a(d), b(2 * d), c(3 * d);
  auto loss = [&] { return eval(a, b, c); };
  ExpectGradient(hu, du, loss, "h_u");
  ExpectGradient(pos, dpos, loss, "positives");
  ExpectGradient(neg, dneg, loss, "negatives");
  // The fixed sign makes a negative pair's loss fall as its score falls.
  std::vector<double> far(d), near(d);
  for (size_t i = 0; i < d; ++i) {
    far[i] = -hu[i];
    near[i] = hu[i];
  }
  std::vector<double> g1(d), g2(d), g3(d);
  std::vector<double> none;
  auto neg_loss = [&](std::vector<double>& v) {
    return *LinkLoss<double>(ConstRowMap<double>(hu.data(), d), View(Span<const double>(none), 0, d),
                             View(Span<const double>(v), 1, d), RowMap<double>(g1.data(), d),
                             View(Span<double>(g2), 0, d), View(Span<double>(g3), 1, d));
  };
  EXPECT_LT(neg_loss(far), neg_loss(near));
  EXPECT_NEAR(LogSigmoid(-800.0), -800.0, 1e-9);
  EXPECT_NEAR(LogSigmoid(800.0), 0.0, 1e-12);
}

void CheckModelGradient(LayerKind kind, bool train, uint64_t seed) {
  ModelShape shape;
  shape.layer = kind;
  shape.features = 5;
  shape.hidden = 8;
  shape.out = 4;
  shape.heads = 2;
  shape.dropout = 0.3f;
  const Tree t(TreeKind::kLumosTree, 3);
  const size_t n = t.g.nodes;
  Result<ParamLayout> layout = LayoutOf(shape);
  ASSERT_TRUE(layout.ok());
  std::vector<double> params = RandomValues(layout->total, seed, 0.6);
  std::vector<double> h0 = RandomValues(n * shape.features, seed + 1);
  for (uint32_t v = 0; v <= 3; ++v) {  // virtual nodes start at zero (Lumos Eq. 25)
    for (uint32_t f = 0; f < shape.features; ++f) h0[v * shape.features + f] = 0;
  }
  const std::vector<double> r = RandomValues(n * shape.out, seed + 2);
  std::vector<double> workspace(WorkspaceScalars(shape, t.g.nodes, static_cast<uint32_t>(t.g.neighbours.size())));
  GnnModel<double> model;
  ASSERT_TRUE(model.Bind(shape, t.g, Span<double>(workspace)).ok());
  ReplayRandom random{0, seed * 977};
  auto loss = [&] {
    random.Reset();
    EXPECT_TRUE(model.Forward(Span<const double>(params), View(Span<const double>(h0), n, shape.features), train,
                              &ReplayRandom::Fill, &random)
                    .ok());
    return Project(model.output(), r);
  };
  loss();
  std::vector<double> grads(layout->total, 0.0);
  ASSERT_TRUE(model.Backward(Span<const double>(params), View(Span<const double>(h0), n, shape.features),
                             View(Span<const double>(r), n, shape.out), Span<double>(grads))
                  .ok());
  ExpectGradient(params, grads, loss, kind == LayerKind::kGat ? "gat model" : "gcn model");
}

TEST(GnnModelTest, TwoLayerGcnGradientMatchesFiniteDifferences) {
  CheckModelGradient(LayerKind::kGcn, false, 71);
  CheckModelGradient(LayerKind::kGcn, true, 72);  // with a dropout mask (replayed)
}

TEST(GnnModelTest, TwoLayerGatGradientMatchesFiniteDifferences) {
  CheckModelGradient(LayerKind::kGat, false, 81);
  CheckModelGradient(LayerKind::kGat, true, 82);
}

TEST(GnnModelTest, LayoutRefusesBadShapesAndCountsTheClassifier) {
  ModelShape s;
  s.features = 10;
  Result<ParamLayout> gcn = LayoutOf(s);
  ASSERT_TRUE(gcn.ok());
  EXPECT_EQ(gcn->total, 10u * 16 + 16 + 16 * 16 + 16);
  s.classes = 3;
  EXPECT_EQ(LayoutOf(s)->total, gcn->total + 16 * 3 + 3);
  s.layer = LayerKind::kGat;
  Result<ParamLayout> gat = LayoutOf(s);
  ASSERT_TRUE(gat.ok());
  EXPECT_EQ(gat->total, gcn->total + 16 * 3 + 3 + 2 * 2 * 16);  // two attention vectors of 4 x 4 per layer
  s.heads = 3;
  EXPECT_FALSE(LayoutOf(s).ok());
  s.heads = 4;
  s.dropout = 1.0f;
  EXPECT_FALSE(LayoutOf(s).ok());
  s.dropout = 0.0f;
  s.features = 0;
  EXPECT_FALSE(LayoutOf(s).ok());
  // A workspace too small is refused at Bind.
  s.features = 4;
  const Tree t(TreeKind::kLumosTree, 2);
  std::vector<float> small(WorkspaceScalars(s, t.g.nodes, static_cast<uint32_t>(t.g.neighbours.size())) - 1);
  GnnModel<float> m;
  EXPECT_EQ(m.Bind(s, t.g, Span<float>(small)).code(), StatusCode::kResourceExhausted);
}

// Inverted dropout: each element dropped with probability p, kept ones
// scaled by 1 / (1 - p). 40,000 draws at p = 0.25: the dropped count lies
// within 5 standard deviations (433) of 10,000.
TEST(GnnDenseTest, TheDropoutMaskDropsAtItsRateAndScalesTheRest) {
  Drbg drbg;
  ASSERT_TRUE(drbg.SeedDeterministic(91).ok());
  std::vector<float> mask(200 * 200);
  ASSERT_TRUE(DropoutMask<float>(0.25f, View(Span<float>(mask), 200, 200), &crypto::DrbgRandom, &drbg).ok());
  size_t dropped = 0;
  for (float m : mask) {
    if (m == 0.0f) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(m, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped), 10000.0, 5 * std::sqrt(40000 * 0.25 * 0.75));
  ASSERT_TRUE(DropoutMask<float>(0.0f, View(Span<float>(mask), 200, 200), nullptr, nullptr).ok());
  for (float m : mask) EXPECT_EQ(m, 1.0f);
  EXPECT_FALSE(DropoutMask<float>(1.0f, View(Span<float>(mask), 200, 200), &crypto::DrbgRandom, &drbg).ok());
}

TEST(GnnModelTest, FloatAndDoubleAgree) {
  ModelShape s;
  s.layer = LayerKind::kGat;
  s.features = 6;
  const Tree t(TreeKind::kLumosTree, 4);
  const size_t n = t.g.nodes;
  Result<ParamLayout> layout = LayoutOf(s);
  ASSERT_TRUE(layout.ok());
  const std::vector<double> pd = RandomValues(layout->total, 101, 0.4), hd = RandomValues(n * s.features, 102);
  const std::vector<float> pf(pd.begin(), pd.end()), hf(hd.begin(), hd.end());
  std::vector<double> wd(WorkspaceScalars(s, t.g.nodes, static_cast<uint32_t>(t.g.neighbours.size())));
  std::vector<float> wf(wd.size());
  GnnModel<double> md;
  GnnModel<float> mf;
  ASSERT_TRUE(md.Bind(s, t.g, Span<double>(wd)).ok());
  ASSERT_TRUE(mf.Bind(s, t.g, Span<float>(wf)).ok());
  ASSERT_TRUE(md.Forward(Span<const double>(pd), View(Span<const double>(hd), n, s.features), false, nullptr, nullptr).ok());
  ASSERT_TRUE(mf.Forward(Span<const float>(pf), View(Span<const float>(hf), n, s.features), false, nullptr, nullptr).ok());
  EXPECT_LT((md.output().cast<float>() - mf.output()).cwiseAbs().maxCoeff(), 1e-4f);
}

}  // namespace
}  // namespace nodefl::gnn
