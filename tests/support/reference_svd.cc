// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The SVD half of reference_linalg.h, in a file of its own so that the
// build compiles it beside the rest.
#include <Eigen/SVD>

#include "reference_linalg.h"

namespace nodefl::test {

ThinSvd ReferenceSvd(const Eigen::MatrixXd& x) {
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(x, Eigen::ComputeThinU | Eigen::ComputeThinV);
  return ThinSvd{svd.matrixU(), svd.singularValues(), svd.matrixV()};
}

double LargestSingularValue(const Eigen::MatrixXd& x) {
  if (x.size() == 0) return 0.0;
  return Eigen::BDCSVD<Eigen::MatrixXd>(x).singularValues()(0);
}

}  // namespace nodefl::test
