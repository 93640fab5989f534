// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The top k left singular vectors U of a filtered matrix X (n x m) by block
// subspace iteration on the n x n Gram matrix X X^T, seen only through its
// products with blocks of b = k + p columns (p = max(10, k), the oversampling
// of projection.h's subspace method). It is the one iteration behind two
// runs (docs/kcagc.md, "The joint spectral space"):
//   - the centralized baseline's whitened space, where X is the whole
//     filtered matrix and the product is GramProduct(X, Q);
//   - the joint mode, where X = [X^1 ... X^L] is split by columns among the
//     participants and the product X X^T Q = Σ_l X^l ((X^l)^T Q) is a
//     secure sum of every participant's GramProduct(X^l, Q).
// With exact sums the two see the same products and so produce the same U;
// the fixed-point sum only perturbs each product by its resolution.
//
// One step: the block Q_t (n x b, orthonormal columns, sent as floats)
// goes out, Y_t = X X^T Q_t comes back. Rayleigh-Ritz on what the caller
// then holds: the top k eigenpairs (θ_j, w_j) of Q_t^T Y_t (b x b; θ_j
// estimates σ_j²). It stops when every Ritz residual
// ‖Y_t w_j - θ_j Q_t w_j‖ = ‖X X^T u_j - θ_j u_j‖ is at most `tolerance`
// times θ_1 (projection.h's tolerance), or after `max_steps` products;
// otherwise Q_{t+1} is an orthonormal basis of Y_t (Householder QR in
// double). Residuals, not the change of the θ_j: a Ritz value errs by the
// square of the subspace's angle, so values that agree to 1e-6 leave the
// angle near 1e-3, a residual only near 1e-6 (docs/kcagc.md has Cora's
// figures). The result is U = Q_t W (W = [w_1 .. w_k]), by decreasing
// value: the whitened coordinates X V Σ^-1 of every node, σ_j = sqrt(θ_j).
//
// The start block is public: uniform in [-1/2, 1/2) from the stream
// StreamSeed(seed, 0x5052) (the one projection.h's subspace method draws
// its start from), filled column by column, then orthonormalised. Whoever
// knows the seed (every participant and the server) can draw it.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/status.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

// b = min(n, m, k + max(10, k)): more columns than the rank of X X^T
// (at most min(n, m)) would only carry rounding.
uint32_t SpectralBlockSize(uint64_t n, uint64_t m, uint32_t k);

// X (X^T Q): n x b, accumulated in double and returned in float (the
// participants' secure-sum inputs are floats). kInvalidArgument when Q has
// another number of rows than X.
[[nodiscard]] Result<Matrix> GramProduct(const Matrix& x, const Matrix& q);

// The iteration as a state machine, so that a caller can run each product
// however it must (in one process, through an Aggregator, over the
// network): Start, then for each block() an Observe of its product, until
// Observe says it is done.
class LeftSubspaceIteration {
 public:
  // n nodes, m columns of X in total (the sum of the slices' widths), k
  // vectors wanted. kInvalidArgument for k = 0, k > min(n, m), or
  // max_steps = 0.
  [[nodiscard]] Status Start(uint32_t n, uint64_t m, uint32_t k, const ProjectionOptions& options);

  // Q_t, n x b: what the participants receive before step t.
  const Matrix& block() const { return block_; }
  uint32_t block_size() const { return static_cast<uint32_t>(block_.cols()); }

  // Y_t = X X^T Q_t for the block() of this step. Returns true when the
  // iteration has finished (then basis() and values() are ready and block()
  // is not to be multiplied again). kInvalidArgument for another shape or a
  // non-finite value, kFailedPrecondition before Start or after the end.
  [[nodiscard]] Result<bool> Observe(const Matrix& product);

  bool done() const { return done_; }
  bool converged() const { return converged_; }
  uint32_t steps() const { return steps_; }   // products observed
  const Matrix& basis() const { return basis_; }                         // U, n x k
  const std::vector<double>& values() const { return singular_values_; }  // σ_1 >= ... >= σ_k

 private:
  uint32_t k_ = 0;
  uint32_t max_steps_ = 0;
  double tolerance_ = 0.0;
  bool started_ = false;
  bool done_ = false;
  bool converged_ = false;
  uint32_t steps_ = 0;
  Matrix block_;
  Matrix basis_;
  std::vector<double> singular_values_;
};

// Supplies X X^T Q for a block Q: in one process from the whole matrix, or
// through secure sums of the participants' GramProduct.
class GramOperator {
 public:
  virtual ~GramOperator() = default;
  [[nodiscard]] virtual Result<Matrix> Apply(const Matrix& block) = 0;
};

// How an iteration went.
struct IterationSummary {
  uint32_t steps = 0;      // products of X X^T with a block
  uint32_t block = 0;      // b
  bool converged = false;  // false: stopped at max_steps
};

struct LeftSingularVectors {
  Matrix basis;                        // U, n x k
  std::vector<double> singular_values;  // σ_1 >= ... >= σ_k
  IterationSummary summary;
};

// The whole iteration with the products from `gram`.
[[nodiscard]] Result<LeftSingularVectors> IterateLeftSubspace(uint32_t n, uint64_t m, uint32_t k,
                                                              const ProjectionOptions& options, GramOperator* gram);

// The same on a matrix held whole (the centralized baseline).
[[nodiscard]] Result<LeftSingularVectors> TopLeftSingularVectors(const Matrix& x, uint32_t k,
                                                                 const ProjectionOptions& options = {});

// The centralized baseline's whitened space: *x (the whole filtered matrix,
// n x m) replaced by its top d = min(dims, n, m) left singular vectors.
// When projection.h's method takes the exact route for this shape (kExact,
// or kAuto with a side of at most 512), ToClusterSpace's exact whitening;
// otherwise TopLeftSingularVectors, the iteration the joint mode runs
// through secure sums. *summary (may be null): the iteration's, all zero on
// the exact route. kInvalidArgument for dims = 0 or an empty matrix.
[[nodiscard]] Status ToCentralWhitenedSpace(uint32_t dims, const ProjectionOptions& options, Matrix* x,
                                            IterationSummary* summary);

}  // namespace nodefl::kcagc
