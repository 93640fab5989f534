// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/spectral.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

using MatrixD = Eigen::MatrixXd;  // column-major double: the solvers' working type
// Row-major like Matrix, so that converting rows of X is a straight copy (a
// column-major copy of a row block is a strided transpose, 6 times slower
// on Facebook's slices).
using RowsD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr uint64_t kStartStream = 0x5052u;  // projection.h's subspace method draws from the same stream
// Rows of X converted to double at a time: a block of a few MB stays in
// cache for its product (measured on 22,470 x 4,714: 0.6 s per GramProduct
// at 128 rows, 1.7 s at 4,096).
constexpr Eigen::Index kRowBlock = 128;

// An orthonormal basis of the columns of a (n x b, b <= n), by Householder QR.
MatrixD Orthonormal(const MatrixD& a) {
  Eigen::HouseholderQR<MatrixD> qr(a);
  return qr.householderQ() * MatrixD::Identity(a.rows(), a.cols());
}

}  // namespace

uint32_t SpectralBlockSize(uint64_t n, uint64_t m, uint32_t k) {
  const uint64_t wanted = uint64_t{k} + std::max<uint64_t>(10, k);
  return static_cast<uint32_t>(std::min({n, m, wanted}));
}

Result<Matrix> GramProduct(const Matrix& x, const Matrix& q) {
  if (q.rows() != x.rows() || q.cols() == 0) return Status::InvalidArgument();
  const Eigen::Index n = x.rows();
  // Double throughout: X^T Q sums n products per entry, and float's
  // rounding of such sums is near the 1e-6 the stopping rule resolves. X is
  // converted in row blocks so that a large slice never exists twice.
  const MatrixD qd = q.cast<double>();
  MatrixD w = MatrixD::Zero(x.cols(), q.cols());
  for (Eigen::Index r = 0; r < n; r += kRowBlock) {
    const Eigen::Index rows = std::min(kRowBlock, n - r);
    const RowsD block = x.middleRows(r, rows).cast<double>();
    w.noalias() += block.transpose() * qd.middleRows(r, rows);
  }
  Matrix y(n, q.cols());
  for (Eigen::Index r = 0; r < n; r += kRowBlock) {
    const Eigen::Index rows = std::min(kRowBlock, n - r);
    const RowsD block = x.middleRows(r, rows).cast<double>();
    y.middleRows(r, rows) = (block * w).cast<float>();
  }
  return y;
}

Status LeftSubspaceIteration::Start(uint32_t n, uint64_t m, uint32_t k, const ProjectionOptions& o) {
  if (k == 0 || k > std::min<uint64_t>(n, m) || o.max_steps == 0 || !(o.tolerance >= 0.0)) {
    return Status::InvalidArgument();
  }
  *this = LeftSubspaceIteration();
  k_ = k;
  max_steps_ = o.max_steps;
  tolerance_ = o.tolerance;
  const uint32_t b = SpectralBlockSize(n, m, k);
  SplitMix64 rng(StreamSeed(o.seed, kStartStream));
  MatrixD start(n, b);
  for (Eigen::Index i = 0; i < start.size(); ++i) start.data()[i] = rng.Uniform() - 0.5;
  block_ = Orthonormal(start).cast<float>();
  started_ = true;
  return Status::Ok();
}

Result<bool> LeftSubspaceIteration::Observe(const Matrix& product) {
  if (!started_ || done_) return Status::FailedPrecondition();
  if (product.rows() != block_.rows() || product.cols() != block_.cols() || !product.allFinite()) {
    return Status::InvalidArgument();
  }
  ++steps_;
  // Rayleigh-Ritz on span(Q_t): Q_t^T X X^T Q_t, from what the caller
  // holds. The block went out as floats, so that rounded block is the Q
  // whose product came back; its columns are orthonormal to float
  // precision.
  const MatrixD q = block_.cast<double>();
  const MatrixD y = product.cast<double>();
  MatrixD h = q.transpose() * y;
  h = 0.5 * (h + h.transpose()).eval();  // symmetric in exact arithmetic; the sums' rounding is not
  Eigen::SelfAdjointEigenSolver<MatrixD> ritz(h);
  // Eigen sorts eigenvalues in increasing order: the top k are the last.
  const Eigen::VectorXd values = ritz.eigenvalues().tail(k_).reverse();
  const MatrixD w = ritz.eigenvectors().rightCols(k_).rowwise().reverse();
  // The Ritz residuals r_j = X X^T u_j - θ_j u_j = Y_t w_j - θ_j Q_t w_j:
  // linear in the subspace's angle, where the change of the values is
  // quadratic (Cora: values settled to 1e-6 after 9 steps with U 3e-3 off
  // the SVD's, and k-means on it kept another clustering for one seed in
  // five; the residuals settle after 14-15 steps, 2.5e-5 off).
  const MatrixD residual = y * w - q * (w * values.asDiagonal());
  const double worst = residual.colwise().norm().maxCoeff();
  bool finished = false;
  if (worst <= tolerance_ * std::max(values(0), 0.0)) {
    converged_ = true;
    finished = true;
  }
  if (!finished && steps_ >= max_steps_) finished = true;
  if (!finished) {
    // Q_{t+1}: an orthonormal basis of Y_t.
    block_ = Orthonormal(y).cast<float>();
    return false;
  }
  basis_ = (q * w).cast<float>();
  singular_values_.resize(k_);
  for (uint32_t j = 0; j < k_; ++j) singular_values_[j] = std::sqrt(std::max(values(j), 0.0));
  done_ = true;
  return true;
}

Result<LeftSingularVectors> IterateLeftSubspace(uint32_t n, uint64_t m, uint32_t k, const ProjectionOptions& options,
                                                GramOperator* gram) {
  if (gram == nullptr) return Status::InvalidArgument();
  LeftSubspaceIteration it;
  NODEFL_TRY(it.Start(n, m, k, options));
  for (;;) {
    NODEFL_TRY_ASSIGN(const Matrix product, gram->Apply(it.block()));
    NODEFL_TRY_ASSIGN(const bool finished, it.Observe(product));
    if (finished) break;
  }
  LeftSingularVectors out;
  out.basis = it.basis();
  out.singular_values = it.values();
  out.summary.steps = it.steps();
  out.summary.block = it.block_size();
  out.summary.converged = it.converged();
  return out;
}

namespace {

class WholeMatrixGram final : public GramOperator {
 public:
  explicit WholeMatrixGram(const Matrix& x) : x_(x) {}
  Result<Matrix> Apply(const Matrix& block) override { return GramProduct(x_, block); }

 private:
  const Matrix& x_;
};

}  // namespace

Result<LeftSingularVectors> TopLeftSingularVectors(const Matrix& x, uint32_t k, const ProjectionOptions& options) {
  if (x.rows() == 0 || x.cols() == 0 || !x.allFinite()) return Status::InvalidArgument();
  WholeMatrixGram gram(x);
  return IterateLeftSubspace(static_cast<uint32_t>(x.rows()), static_cast<uint64_t>(x.cols()), k, options, &gram);
}

Status ToCentralWhitenedSpace(uint32_t dims, const ProjectionOptions& options, Matrix* x, IterationSummary* summary) {
  if (summary != nullptr) *summary = IterationSummary();
  if (x == nullptr || dims == 0 || x->rows() == 0 || x->cols() == 0) return Status::InvalidArgument();
  if (TakesExactMethod(options, x->rows(), x->cols())) {
    return ToClusterSpace(ClusterSpace::kWhitened, dims, options, x);
  }
  const auto d = static_cast<uint32_t>(std::min<Eigen::Index>({static_cast<Eigen::Index>(dims), x->rows(), x->cols()}));
  NODEFL_TRY_ASSIGN(LeftSingularVectors u, TopLeftSingularVectors(*x, d, options));
  if (summary != nullptr) *summary = u.summary;
  x->swap(u.basis);
  return Status::Ok();
}

}  // namespace nodefl::kcagc
