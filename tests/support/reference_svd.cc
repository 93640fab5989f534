// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The SVD half of reference_linalg.h, in a file of its own so that the
// build compiles it beside the rest. JacobiSVD (two-sided Jacobi after a
// column-pivoting QR): the most accurate of Eigen's SVDs, and fast on the
// tests' matrices (a few hundred rows, at most about a hundred columns);
// it compiles in a third of BDCSVD's time (9 s against 33 s at -O2), in
// every build that runs kCAGC's tests, the cross and sanitizer ones too.
#include <Eigen/SVD>

#include "reference_linalg.h"

namespace nodefl::test {

ThinSvd ReferenceSvd(const Eigen::MatrixXd& x) {
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(x, Eigen::ComputeThinU | Eigen::ComputeThinV);
  return ThinSvd{svd.matrixU(), svd.singularValues(), svd.matrixV()};
}

double LargestSingularValue(const Eigen::MatrixXd& x) {
  if (x.size() == 0) return 0.0;
  return Eigen::JacobiSVD<Eigen::MatrixXd>(x).singularValues()(0);
}

}  // namespace nodefl::test
