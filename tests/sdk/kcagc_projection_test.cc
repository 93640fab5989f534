// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC's projection (Protocol 1 line 4): the basis is orthonormal and spans
// the top-k right singular subspace (against Eigen's SVD), by both methods
// and on both sides of the Gram trick; the projection captures the top
// singular values' energy; the cluster spaces keep their promises.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

// X = U diag(σ) V^T + noise with σ_j = 100 * 0.7^j: a clear spectral gap.
Matrix PlantedSpectrum(uint32_t n, uint32_t m, uint64_t seed) {
  SplitMix64 rng(seed);
  auto gauss = [&rng] {
    const double u1 = rng.Uniform() + 1e-12, u2 = rng.Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
  const uint32_t r = std::min(n, m);
  Eigen::MatrixXd a(n, r), b(m, r);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = gauss();
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = gauss();
  const Eigen::MatrixXd u = Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ() * Eigen::MatrixXd::Identity(n, r);
  const Eigen::MatrixXd v = Eigen::HouseholderQR<Eigen::MatrixXd>(b).householderQ() * Eigen::MatrixXd::Identity(m, r);
  Eigen::VectorXd sigma(r);
  for (uint32_t j = 0; j < r; ++j) sigma(j) = 100.0 * std::pow(0.7, j);
  Eigen::MatrixXd x = u * sigma.asDiagonal() * v.transpose();
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] += 1e-3 * gauss();
  return x.cast<float>();
}

void ExpectTopSubspace(const Matrix& x, const Matrix& basis, uint32_t k) {
  ASSERT_EQ(basis.rows(), x.cols());
  ASSERT_EQ(basis.cols(), static_cast<Eigen::Index>(k));
  const Eigen::MatrixXd v = basis.cast<double>();
  // Orthonormal columns.
  EXPECT_LT((v.transpose() * v - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff(), 1e-5);
  // The same subspace as the SVD's top k (projectors agree).
  Eigen::BDCSVD<Eigen::MatrixXd> svd(x.cast<double>(), Eigen::ComputeThinV);
  const Eigen::MatrixXd ref = svd.matrixV().leftCols(k);
  EXPECT_LT((v * v.transpose() - ref * ref.transpose()).norm(), 1e-4);
  // It captures the top singular values' energy ‖X V‖² = Σ_{j<k} σ_j².
  const double captured = (x.cast<double>() * v).squaredNorm();
  const double top = svd.singularValues().head(k).squaredNorm();
  EXPECT_NEAR(captured / top, 1.0, 1e-5);
  // In order: column j carries σ_j.
  for (uint32_t j = 0; j < k; ++j) {
    EXPECT_NEAR((x.cast<double>() * v.col(j)).norm() / svd.singularValues()(j), 1.0, 1e-4) << j;
  }
}

TEST(ProjectionTest, ExactMethodTallMatrix) {
  const Matrix x = PlantedSpectrum(300, 80, 1);
  ProjectionOptions o;
  o.method = ProjectionMethod::kExact;
  const Result<Matrix> v = TopRightSingularVectors(x, 6, o);
  ASSERT_TRUE(v.ok());
  ExpectTopSubspace(x, v.value(), 6);
}

TEST(ProjectionTest, ExactMethodWideMatrix) {
  const Matrix x = PlantedSpectrum(60, 200, 2);
  ProjectionOptions o;
  o.method = ProjectionMethod::kExact;
  const Result<Matrix> v = TopRightSingularVectors(x, 5, o);
  ASSERT_TRUE(v.ok());
  ExpectTopSubspace(x, v.value(), 5);
}

TEST(ProjectionTest, SubspaceIterationOnALargerMatrix) {
  // Both sides above 512: kAuto takes subspace iteration.
  const Matrix x = PlantedSpectrum(700, 560, 3);
  const Result<Matrix> v = TopRightSingularVectors(x, 7);
  ASSERT_TRUE(v.ok());
  ExpectTopSubspace(x, v.value(), 7);
}

TEST(ProjectionTest, SubspaceIterationAgreesWithExact) {
  const Matrix x = PlantedSpectrum(250, 90, 4);
  ProjectionOptions o;
  o.method = ProjectionMethod::kSubspace;
  const Result<Matrix> v = TopRightSingularVectors(x, 4, o);
  ASSERT_TRUE(v.ok());
  ExpectTopSubspace(x, v.value(), 4);
}

TEST(ProjectionTest, RefusesImpossibleRanks) {
  const Matrix x = PlantedSpectrum(20, 10, 5);
  EXPECT_EQ(TopRightSingularVectors(x, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TopRightSingularVectors(x, 11).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Project(x, Matrix(9, 2)).status().code(), StatusCode::kInvalidArgument);
}

TEST(ProjectionTest, ClusterSpaces) {
  const Matrix x = PlantedSpectrum(200, 50, 6);
  Matrix full = x, projected = x, whitened = x;
  ASSERT_TRUE(ToClusterSpace(ClusterSpace::kFull, 4, {}, &full).ok());
  EXPECT_EQ(full, x);
  ASSERT_TRUE(ToClusterSpace(ClusterSpace::kProjected, 4, {}, &projected).ok());
  ASSERT_TRUE(ToClusterSpace(ClusterSpace::kWhitened, 4, {}, &whitened).ok());
  ASSERT_EQ(projected.cols(), 4);
  ASSERT_EQ(whitened.cols(), 4);
  // Whitened columns are the top left singular vectors: orthonormal.
  const Eigen::MatrixXd u = whitened.cast<double>();
  EXPECT_LT((u.transpose() * u - Eigen::MatrixXd::Identity(4, 4)).cwiseAbs().maxCoeff(), 1e-4);
  // Projected columns carry σ_j: column norms fall like 0.7^j.
  EXPECT_NEAR(projected.col(1).norm() / projected.col(0).norm(), 0.7, 1e-3);
  Matrix bad = x;
  EXPECT_EQ(ToClusterSpace(ClusterSpace::kProjected, 0, {}, &bad).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace nodefl::kcagc
