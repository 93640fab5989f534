// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC's graph filter (kCAGC Sec. 3.2): ψ sparse products equal the dense
// definition G = p(L_s) (an explicit matrix power, and Q p(Λ) Q^T) on a
// small graph, for both responses, with and without self loops; ‖L_s‖
// matches the dense eigenvalue; filtering slices is filtering the whole
// matrix bit for bit; bad graphs are refused.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/kcagc/rng.h"
#include "reference_linalg.h"

namespace nodefl::kcagc {
namespace {

// A small graph: a 5-cycle with a chord, a pendant path, an isolated node.
struct SmallGraph {
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> neighbours;
  uint32_t n = 9;
  GraphView view() const { return {n, Span<const uint64_t>(offsets.data(), offsets.size()),
                                   Span<const uint32_t>(neighbours.data(), neighbours.size())}; }
  Eigen::MatrixXd adjacency() const {
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint64_t e = offsets[v]; e < offsets[v + 1]; ++e) a(v, neighbours[e]) = 1.0;
    }
    return a;
  }
};

SmallGraph MakeGraph() {
  const std::vector<std::pair<uint32_t, uint32_t>> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0},
                                                            {0, 2}, {4, 5}, {5, 6}, {6, 7}};
  SmallGraph g;
  std::vector<std::vector<uint32_t>> adj(g.n);
  for (auto [u, v] : edges) {
    adj[u].push_back(v);
    adj[v].push_back(u);
  }
  g.offsets.push_back(0);
  for (auto& list : adj) {
    std::sort(list.begin(), list.end());
    g.neighbours.insert(g.neighbours.end(), list.begin(), list.end());
    g.offsets.push_back(g.neighbours.size());
  }
  return g;  // node 8 is isolated
}

Matrix RandomFeatures(uint32_t n, uint32_t m, uint64_t seed) {
  SplitMix64 rng(seed);
  Matrix x(n, m);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
  return x;
}

Eigen::MatrixXd Laplacian(const SmallGraph& g, bool self_loops) {
  Eigen::MatrixXd a = g.adjacency();
  if (self_loops) a += Eigen::MatrixXd::Identity(g.n, g.n);
  Eigen::VectorXd inv(g.n);
  for (uint32_t v = 0; v < g.n; ++v) {
    const double d = a.row(v).sum();
    inv(v) = d > 0 ? 1.0 / std::sqrt(d) : 0.0;
  }
  return Eigen::MatrixXd::Identity(g.n, g.n) - inv.asDiagonal() * a * inv.asDiagonal();
}

double LargestEigenvalue(const Eigen::MatrixXd& l) {
  return test::ReferenceSymmetricEigen(l).values.maxCoeff();
}

class FilterTest : public ::testing::TestWithParam<std::tuple<FilterKind, bool, uint32_t>> {};

TEST_P(FilterTest, EqualsTheDenseMatrixPower) {
  const auto [kind, self_loops, order] = GetParam();
  const SmallGraph g = MakeGraph();
  const Eigen::MatrixXd ls = Laplacian(g, self_loops);
  const double nu = kind == FilterKind::kHalf ? 2.0 : LargestEigenvalue(ls);
  const Eigen::MatrixXd step = Eigen::MatrixXd::Identity(g.n, g.n) - ls / nu;
  Eigen::MatrixXd power = Eigen::MatrixXd::Identity(g.n, g.n);
  for (uint32_t i = 0; i < order; ++i) power = power * step;

  const Matrix x = RandomFeatures(g.n, 5, 42);
  Matrix filtered = x;
  FilterOptions o;
  o.kind = kind;
  o.order = order;
  o.self_loops = self_loops;
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &filtered).ok());
  const Eigen::MatrixXd reference = power * x.cast<double>();
  EXPECT_LT((filtered.cast<double>() - reference).cwiseAbs().maxCoeff(), 2e-5)
      << "kind " << static_cast<int>(kind) << " self loops " << self_loops << " order " << order;

  // The paper's definition, Q p(Λ) Q^T, is the same matrix.
  const test::SymmetricEigen eig = test::ReferenceSymmetricEigen(ls);
  Eigen::VectorXd p(g.n);
  for (uint32_t i = 0; i < g.n; ++i) p(i) = std::pow(1.0 - eig.values(i) / nu, order);
  const Eigen::MatrixXd spectral = eig.vectors * p.asDiagonal() * eig.vectors.transpose();
  EXPECT_LT((spectral - power).cwiseAbs().maxCoeff(), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(BothFilters, FilterTest,
                         ::testing::Combine(::testing::Values(FilterKind::kHalf, FilterKind::kNorm),
                                            ::testing::Bool(), ::testing::Values(1u, 3u, 9u)));

TEST(FilterTest, LaplacianNormMatchesTheDenseEigenvalue) {
  const SmallGraph g = MakeGraph();
  for (bool self_loops : {true, false}) {
    const Result<double> norm = LaplacianNorm(g.view(), self_loops);
    ASSERT_TRUE(norm.ok());
    EXPECT_NEAR(norm.value(), LargestEigenvalue(Laplacian(g, self_loops)), 1e-6) << self_loops;
  }
}

TEST(FilterTest, OrderZeroIsTheIdentityAndSelfLoopsChangeTheResult) {
  const SmallGraph g = MakeGraph();
  const Matrix x = RandomFeatures(g.n, 3, 7);
  Matrix y = x;
  FilterOptions o;
  o.order = 0;
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &y).ok());
  EXPECT_EQ(y, x);
  Matrix with = x, without = x;
  o.order = 2;
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &with).ok());
  o.self_loops = false;
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &without).ok());
  EXPECT_GT((with - without).cwiseAbs().maxCoeff(), 1e-3);
  // Without self loops the isolated node's row of D^-1/2 A D^-1/2 is zero:
  // the half filter halves it at every step.
  EXPECT_NEAR(without(8, 0), x(8, 0) / 4.0f, 1e-6);
  EXPECT_NEAR(with(8, 0), x(8, 0), 1e-6);  // with a self loop it is its own neighbourhood
}

TEST(FilterTest, FilteringSlicesIsFilteringTheWholeMatrixBitForBit) {
  const SmallGraph g = MakeGraph();
  const Matrix x = RandomFeatures(g.n, 11, 3);
  FilterOptions o;
  o.order = 5;
  Matrix whole = x, left = x.leftCols(4), right = x.rightCols(7);
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &whole).ok());
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &left).ok());
  ASSERT_TRUE(ApplyGraphFilter(g.view(), o, &right).ok());
  EXPECT_EQ(Matrix(whole.leftCols(4)), left);
  EXPECT_EQ(Matrix(whole.rightCols(7)), right);
}

TEST(FilterTest, RefusesBadGraphsAndShapes) {
  SmallGraph g = MakeGraph();
  Matrix x = RandomFeatures(g.n, 2, 1);
  Matrix wrong_rows = RandomFeatures(g.n - 1, 2, 1);
  FilterOptions o;
  EXPECT_EQ(ApplyGraphFilter(g.view(), o, &wrong_rows).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyGraphFilter(g.view(), o, nullptr).code(), StatusCode::kInvalidArgument);
  SmallGraph bad = g;
  bad.neighbours[0] = 99;  // out of range
  EXPECT_EQ(ApplyGraphFilter(bad.view(), o, &x).code(), StatusCode::kInvalidArgument);
  bad = g;
  bad.neighbours[0] = 0;  // node 0 lists itself
  EXPECT_EQ(ValidateGraph(bad.view()).code(), StatusCode::kInvalidArgument);
  bad = g;
  bad.offsets.pop_back();
  EXPECT_EQ(ValidateGraph(bad.view()).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateGraph(g.view()).ok());
}

}  // namespace
}  // namespace nodefl::kcagc
