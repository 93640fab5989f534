// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Reference decompositions in double for tests that check the project's
// own linear algebra (kCAGC's projections, spectral iterations and graph
// filters) against Eigen's.
//
// Why a library rather than Eigen calls in each test: Eigen's
// decompositions are templates instantiated in every file that names
// them, and they are slow to compile (JacobiSVD<MatrixXd> alone takes about
// 9 s of compiler time, BDCSVD 33 s); here they are compiled once per build.
#pragma once

#include <Eigen/Core>

namespace nodefl::test {

// The thin SVD x = U diag(σ) V^T, σ in decreasing order (Eigen's JacobiSVD).
struct ThinSvd {
  Eigen::MatrixXd u;
  Eigen::VectorXd singular_values;
  Eigen::MatrixXd v;
};
ThinSvd ReferenceSvd(const Eigen::MatrixXd& x);

// x's largest singular value (0 for an empty matrix).
double LargestSingularValue(const Eigen::MatrixXd& x);

// The eigendecomposition a = Q diag(λ) Q^T of a symmetric matrix, λ in
// increasing order, eigenvectors in Q's columns (SelfAdjointEigenSolver).
struct SymmetricEigen {
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
};
SymmetricEigen ReferenceSymmetricEigen(const Eigen::MatrixXd& a);

// The first m.cols() columns of the Q of m's Householder QR: an
// orthonormal basis of m's column span when m has full column rank.
Eigen::MatrixXd OrthonormalColumns(const Eigen::MatrixXd& m);

}  // namespace nodefl::test
