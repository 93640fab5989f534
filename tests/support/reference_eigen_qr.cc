// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The symmetric eigensolver and QR half of reference_linalg.h.
#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include "reference_linalg.h"

namespace nodefl::test {

SymmetricEigen ReferenceSymmetricEigen(const Eigen::MatrixXd& a) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(a);
  return SymmetricEigen{solver.eigenvalues(), solver.eigenvectors()};
}

Eigen::MatrixXd OrthonormalColumns(const Eigen::MatrixXd& m) {
  return Eigen::HouseholderQR<Eigen::MatrixXd>(m).householderQ() * Eigen::MatrixXd::Identity(m.rows(), m.cols());
}

}  // namespace nodefl::test
