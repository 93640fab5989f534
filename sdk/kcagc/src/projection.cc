// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/projection.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

using MatrixD = Eigen::MatrixXd;  // column-major double: the solvers' working type

constexpr Eigen::Index kExactLimit = 512;
constexpr Eigen::Index kRowBlock = 4096;  // rows converted to double at a time

// The top k eigenvectors of a symmetric matrix as columns, largest first.
MatrixD TopEigenvectors(const MatrixD& gram, uint32_t k) {
  Eigen::SelfAdjointEigenSolver<MatrixD> solver(gram);
  // Eigen sorts eigenvalues in increasing order.
  return solver.eigenvectors().rightCols(k).rowwise().reverse();
}

Result<Matrix> Exact(const Matrix& x, uint32_t k) {
  const Eigen::Index n = x.rows(), m = x.cols();
  if (m <= n) {
    // V = top eigenvectors of X^T X, accumulated over row blocks in double.
    MatrixD gram = MatrixD::Zero(m, m);
    for (Eigen::Index r = 0; r < n; r += kRowBlock) {
      const Eigen::Index rows = std::min(kRowBlock, n - r);
      const MatrixD block = x.middleRows(r, rows).cast<double>();
      gram.selfadjointView<Eigen::Lower>().rankUpdate(block.transpose());
    }
    gram.triangularView<Eigen::StrictlyUpper>() = gram.transpose();
    return Matrix(TopEigenvectors(gram, k).cast<float>());
  }
  // n < m: U from X X^T, then V = X^T U / σ (σ = ‖X^T u‖).
  const MatrixD xd = x.cast<double>();
  const MatrixD gram = xd * xd.transpose();
  MatrixD v = xd.transpose() * TopEigenvectors(gram, k);
  for (Eigen::Index j = 0; j < v.cols(); ++j) {
    const double s = v.col(j).norm();
    if (s > 0) v.col(j) /= s;
  }
  // A zero singular value gives a zero column: complete it to an
  // orthonormal basis so that the result is always one.
  Eigen::HouseholderQR<MatrixD> qr(v);
  const MatrixD q = qr.householderQ() * MatrixD::Identity(m, k);
  for (Eigen::Index j = 0; j < v.cols(); ++j) {
    if (v.col(j).norm() < 0.5) v.col(j) = q.col(j);
  }
  return Matrix(v.cast<float>());
}

// An orthonormal basis of the columns of a (n x b), b <= n.
MatrixD Orthonormal(const MatrixD& a) {
  Eigen::HouseholderQR<MatrixD> qr(a);
  return qr.householderQ() * MatrixD::Identity(a.rows(), a.cols());
}

Result<Matrix> Subspace(const Matrix& x, uint32_t k, const ProjectionOptions& o) {
  const Eigen::Index n = x.rows(), m = x.cols();
  const Eigen::Index b = std::min<Eigen::Index>(std::min(n, m), k + std::max<Eigen::Index>(10, k));
  SplitMix64 rng(StreamSeed(o.seed, 0x5052u));
  MatrixD q(m, b);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = rng.Uniform() - 0.5;
  q = Orthonormal(q);
  Eigen::VectorXd previous = Eigen::VectorXd::Zero(k);
  for (uint32_t step = 0; step < o.max_steps; ++step) {
    // One step of X^T X on the block, orthonormalised after each factor
    // (so the small singular values are not lost to rounding).
    const Matrix y = x * q.cast<float>();
    const MatrixD qy = Orthonormal(y.cast<double>());
    const Matrix z = x.transpose() * qy.cast<float>();
    Eigen::HouseholderQR<MatrixD> qr(z.cast<double>());
    q = qr.householderQ() * MatrixD::Identity(m, b);
    // |R_jj| tends to σ_j: stop when the leading k have settled.
    const MatrixD r = qr.matrixQR().topRows(b).triangularView<Eigen::Upper>();
    Eigen::VectorXd current = r.diagonal().head(k).cwiseAbs();
    const double change = (current - previous).cwiseAbs().maxCoeff();
    previous = current;
    if (step > 0 && change <= o.tolerance * std::max(current.maxCoeff(), 1e-300)) break;
  }
  // Rayleigh-Ritz: the right singular vectors of X Q rotate Q onto the
  // singular vectors themselves, ordered by singular value.
  const MatrixD xq = (x * q.cast<float>()).cast<double>();
  Eigen::JacobiSVD<MatrixD> svd(xq, Eigen::ComputeThinV);
  const MatrixD v = q * svd.matrixV().leftCols(k);
  return Matrix(v.cast<float>());  // Q and V's columns are orthonormal, so are these
}

}  // namespace

bool TakesExactMethod(const ProjectionOptions& o, int64_t rows, int64_t cols) {
  return o.method == ProjectionMethod::kExact || (o.method == ProjectionMethod::kAuto && std::min(rows, cols) <= kExactLimit);
}

Result<Matrix> TopRightSingularVectors(const Matrix& x, uint32_t k, const ProjectionOptions& o) {
  const Eigen::Index small = std::min(x.rows(), x.cols());
  if (k == 0 || static_cast<Eigen::Index>(k) > small || !x.allFinite()) return Status::InvalidArgument();
  return TakesExactMethod(o, x.rows(), x.cols()) ? Exact(x, k) : Subspace(x, k, o);
}

Result<Matrix> Project(const Matrix& x, const Matrix& basis) {
  if (basis.rows() != x.cols()) return Status::InvalidArgument();
  return Matrix(x * basis);
}

Status ToClusterSpace(ClusterSpace space, uint32_t dims, const ProjectionOptions& options, Matrix* x) {
  if (x == nullptr || dims == 0 || x->rows() == 0 || x->cols() == 0) return Status::InvalidArgument();
  if (space == ClusterSpace::kFull) return Status::Ok();
  const auto d = static_cast<uint32_t>(std::min<Eigen::Index>({static_cast<Eigen::Index>(dims), x->rows(), x->cols()}));
  NODEFL_TRY_ASSIGN(const Matrix basis, TopRightSingularVectors(*x, d, options));
  Matrix p = *x * basis;
  if (space == ClusterSpace::kWhitened) {
    // Column j of X V is σ_j u_j; a zero singular value leaves a zero column.
    for (Eigen::Index j = 0; j < p.cols(); ++j) {
      const double sigma = p.col(j).cast<double>().norm();
      if (sigma > 0) p.col(j) = (p.col(j).cast<double>() / sigma).cast<float>();
    }
  }
  x->swap(p);
  return Status::Ok();
}

}  // namespace nodefl::kcagc
