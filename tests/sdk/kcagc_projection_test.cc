// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC's projection (Protocol 1 line 4): the basis is orthonormal and spans
// the top-k right singular subspace (against Eigen's SVD), by both methods
// and on both sides of the Gram trick; the projection captures the top
// singular values' energy; the cluster spaces keep their promises.
//
// The left subspace iteration behind the centralized whitened space and the
// joint mode (spectral.h): it finds the top-k left singular vectors and
// values of the SVD; fed the sum of column slices' products it takes the
// same steps to the same subspace as on the whole matrix; the start block is
// the seed's; the state machine refuses misuse; the central whitened space
// takes the exact route for small matrices and agrees with the iteration;
// G_l (range.h) bounds every entry a participant submits.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/spectral.h"
#include "kcagc_spectra.h"
#include "reference_linalg.h"

namespace nodefl::kcagc {
namespace {

// A clear spectral gap: σ_j = 100 * 0.7^j.
Matrix PlantedSpectrum(uint32_t n, uint32_t m, uint64_t seed) { return kcagc_test::SpectrumMatrix(n, m, 100.0, 0.7, seed); }

void ExpectTopSubspace(const Matrix& x, const Matrix& basis, uint32_t k) {
  ASSERT_EQ(basis.rows(), x.cols());
  ASSERT_EQ(basis.cols(), static_cast<Eigen::Index>(k));
  const Eigen::MatrixXd v = basis.cast<double>();
  // Orthonormal columns.
  EXPECT_LT((v.transpose() * v - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff(), 1e-5);
  // The same subspace as the SVD's top k (projectors agree).
  const test::ThinSvd svd = test::ReferenceSvd(x.cast<double>());
  const Eigen::MatrixXd ref = svd.v.leftCols(k);
  EXPECT_LT((v * v.transpose() - ref * ref.transpose()).norm(), 1e-4);
  // It captures the top singular values' energy ‖X V‖² = Σ_{j<k} σ_j².
  const double captured = (x.cast<double>() * v).squaredNorm();
  const double top = svd.singular_values.head(k).squaredNorm();
  EXPECT_NEAR(captured / top, 1.0, 1e-5);
  // In order: column j carries σ_j.
  for (uint32_t j = 0; j < k; ++j) {
    EXPECT_NEAR((x.cast<double>() * v.col(j)).norm() / svd.singular_values(j), 1.0, 1e-4) << j;
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

// The left subspace iteration (spectral.h).

// A gap that subspace iteration needs a few tens of steps for: σ_j = 50 * 0.8^j.
Matrix Spectrum(uint32_t n, uint32_t m, uint64_t seed) { return kcagc_test::SpectrumMatrix(n, m, 50.0, 0.8, seed); }

using kcagc_test::LargestAngleSine;

// X X^T Q as the sum of the column slices' products, in double.
class SlicedGram final : public GramOperator {
 public:
  explicit SlicedGram(std::vector<Matrix> slices) : slices_(std::move(slices)) {}
  Result<Matrix> Apply(const Matrix& block) override {
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(block.rows(), block.cols());
    for (const Matrix& s : slices_) {
      NODEFL_TRY_ASSIGN(const std::vector<float> z, JointSpectralContribution(s, block));
      EXPECT_EQ(z.size(), static_cast<size_t>(block.size()));
      sum += Eigen::Map<const Matrix>(z.data(), block.rows(), block.cols()).cast<double>();
    }
    return Matrix(sum.cast<float>());
  }

 private:
  std::vector<Matrix> slices_;
};

std::vector<Matrix> ColumnSlices(const Matrix& x, uint32_t parts) {
  std::vector<Matrix> out;
  Eigen::Index at = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    const Eigen::Index width = x.cols() / parts + (p < x.cols() % parts ? 1 : 0);
    out.push_back(x.middleCols(at, width));
    at += width;
  }
  return out;
}

TEST(SpectralTest, FindsTheTopLeftSingularVectorsAndValues) {
  const Matrix x = Spectrum(700, 600, 1);
  const uint32_t k = 7;
  const Result<LeftSingularVectors> r = TopLeftSingularVectors(x, k);
  ASSERT_TRUE(r.ok());
  const Matrix& u = r->basis;
  ASSERT_EQ(u.rows(), 700);
  ASSERT_EQ(u.cols(), 7);
  EXPECT_TRUE(r->summary.converged);
  EXPECT_EQ(r->summary.block, 17u);  // k + max(10, k)
  EXPECT_GT(r->summary.steps, 2u);
  EXPECT_LT(r->summary.steps, 300u);
  const Eigen::MatrixXd ud = u.cast<double>();
  EXPECT_LT((ud.transpose() * ud - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff(), 1e-5);
  const test::ThinSvd svd = test::ReferenceSvd(x.cast<double>());
  EXPECT_LT(LargestAngleSine(u, svd.u.leftCols(k).cast<float>()), 1e-3);
  for (uint32_t j = 0; j < k; ++j) {
    EXPECT_NEAR(r->singular_values[j] / svd.singular_values(j), 1.0, 1e-5) << j;
    // Column j is u_j itself (up to sign), not just a vector of the span.
    EXPECT_NEAR(std::abs(ud.col(j).dot(svd.u.col(j))), 1.0, 1e-4) << j;
  }
}

TEST(SpectralTest, SlicesSummedGiveTheWholeMatrixIteration) {
  const Matrix x = Spectrum(400, 90, 2);
  const uint32_t k = 5;
  ProjectionOptions o;
  o.seed = 77;
  const LeftSingularVectors whole = TopLeftSingularVectors(x, k, o).value();
  for (const uint32_t parts : {2u, 3u, 5u}) {
    SlicedGram gram(ColumnSlices(x, parts));
    const Result<LeftSingularVectors> joint = IterateLeftSubspace(400, 90, k, o, &gram);
    ASSERT_TRUE(joint.ok());
    // The same iteration up to the rounding of the sums: the same span and
    // the same values, and (the stopping rule sees the same values) the
    // same number of steps give or take the last.
    EXPECT_LT(LargestAngleSine(joint->basis, whole.basis), 1e-6) << parts;
    EXPECT_LE(std::abs(static_cast<int>(joint->summary.steps) - static_cast<int>(whole.summary.steps)), 1) << parts;
    for (uint32_t j = 0; j < k; ++j) EXPECT_NEAR(joint->singular_values[j] / whole.singular_values[j], 1.0, 1e-6);
  }
}

TEST(SpectralTest, TheStartBlockIsTheSeeds) {
  LeftSubspaceIteration a, b, c;
  ProjectionOptions o;
  o.seed = 5;
  ASSERT_TRUE(a.Start(50, 30, 3, o).ok());
  ASSERT_TRUE(b.Start(50, 30, 3, o).ok());
  o.seed = 6;
  ASSERT_TRUE(c.Start(50, 30, 3, o).ok());
  EXPECT_EQ(a.block(), b.block());
  EXPECT_NE(a.block(), c.block());
  EXPECT_EQ(a.block_size(), 13u);
  const Eigen::MatrixXd q = a.block().cast<double>();
  EXPECT_LT((q.transpose() * q - Eigen::MatrixXd::Identity(13, 13)).cwiseAbs().maxCoeff(), 1e-6);
  // b never exceeds min(n, m): the rank of X X^T.
  LeftSubspaceIteration narrow;
  ASSERT_TRUE(narrow.Start(50, 8, 3, o).ok());
  EXPECT_EQ(narrow.block_size(), 8u);
}

TEST(SpectralTest, RefusesMisuse) {
  LeftSubspaceIteration it;
  EXPECT_EQ(it.Observe(Matrix::Zero(10, 4)).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(it.Start(10, 6, 0, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(it.Start(10, 6, 7, {}).code(), StatusCode::kInvalidArgument);
  ProjectionOptions capped;
  capped.max_steps = 2;
  ASSERT_TRUE(it.Start(10, 6, 2, capped).ok());
  EXPECT_EQ(it.Observe(Matrix::Zero(10, 5)).status().code(), StatusCode::kInvalidArgument);
  Matrix bad = Matrix::Zero(10, 6);
  bad(0, 0) = std::nanf("");
  EXPECT_EQ(it.Observe(bad).status().code(), StatusCode::kInvalidArgument);
  const Matrix x = Spectrum(10, 6, 3);
  EXPECT_FALSE(it.Observe(GramProduct(x, it.block()).value()).value());
  EXPECT_TRUE(it.Observe(GramProduct(x, it.block()).value()).value());  // the cap
  EXPECT_TRUE(it.done());
  EXPECT_EQ(it.steps(), 2u);
  EXPECT_EQ(it.Observe(GramProduct(x, it.block()).value()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(GramProduct(x, Matrix::Zero(9, 3)).status().code(), StatusCode::kInvalidArgument);
}

TEST(SpectralTest, CentralWhitenedSpaceExactForSmallIterationAbove) {
  // A side of at most 512: ToClusterSpace's exact whitening, no steps.
  const Matrix small = Spectrum(300, 60, 4);
  Matrix exact = small;
  IterationSummary summary;
  ASSERT_TRUE(ToCentralWhitenedSpace(5, {}, &exact, &summary).ok());
  EXPECT_EQ(summary.steps, 0u);
  Matrix reference = small;
  ASSERT_TRUE(ToClusterSpace(ClusterSpace::kWhitened, 5, {}, &reference).ok());
  EXPECT_EQ(exact, reference);
  // Forced through the iteration: the same span.
  ProjectionOptions iterate;
  iterate.method = ProjectionMethod::kSubspace;
  Matrix iterated = small;
  ASSERT_TRUE(ToCentralWhitenedSpace(5, iterate, &iterated, &summary).ok());
  EXPECT_GT(summary.steps, 0u);
  EXPECT_TRUE(summary.converged);
  ASSERT_EQ(iterated.cols(), 5);
  EXPECT_LT(LargestAngleSine(iterated, exact), 1e-4);
  // dims above min(n, m) are clamped, as ToClusterSpace does.
  Matrix narrow = Spectrum(600, 4, 5);
  ASSERT_TRUE(ToCentralWhitenedSpace(7, iterate, &narrow, &summary).ok());
  EXPECT_EQ(narrow.cols(), 4);
}

TEST(SpectralTest, GramBoundCoversEveryContribution) {
  const Matrix x = Spectrum(200, 40, 6);
  SplitMix64 rng(9);
  Eigen::MatrixXd a(200, 12);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = rng.Uniform() - 0.5;
  // The worst block for row i points along (X^l)^T x_i's direction; a
  // random orthonormal one and the top left singular vectors both stay under.
  const Matrix random = Matrix(test::OrthonormalColumns(a).cast<float>());
  const Matrix top = TopLeftSingularVectors(x, 12).value().basis;
  const double bound = GramBound(x);
  for (const Matrix* q : {&random, &top}) {
    const std::vector<float> z = JointSpectralContribution(x, *q).value();
    double largest = 0;
    for (const float v : z) largest = std::max(largest, std::abs(double{v}));
    EXPECT_LE(largest, bound);
    EXPECT_GT(largest, 1e-3 * bound);  // not vacuous
  }
  EXPECT_EQ(GramBound(Matrix(0, 3)), 0.0);
}

}  // namespace
}  // namespace nodefl::kcagc
