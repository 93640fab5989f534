// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Matrices with a known spectrum, and the distance between two subspaces,
// for the tests of kCAGC's projections and spectral iterations (sdk and
// server side alike).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/types.h"
#include "reference_linalg.h"

namespace nodefl::kcagc_test {

// X = A diag(σ) B^T + 1e-3 Gaussian noise, A and B random orthonormal, with
// σ_j = top · ratio^j: the ratio sets the spectral gap, hence how many
// steps a subspace iteration needs.
inline kcagc::Matrix SpectrumMatrix(uint32_t n, uint32_t m, double top, double ratio, uint64_t seed) {
  kcagc::SplitMix64 rng(seed);
  auto gauss = [&rng] {
    const double u1 = rng.Uniform() + 1e-12, u2 = rng.Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
  const uint32_t r = std::min(n, m);
  Eigen::MatrixXd a(n, r), b(m, r);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = gauss();
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = gauss();
  const Eigen::MatrixXd u = test::OrthonormalColumns(a);
  const Eigen::MatrixXd v = test::OrthonormalColumns(b);
  Eigen::VectorXd sigma(r);
  for (uint32_t j = 0; j < r; ++j) sigma(j) = top * std::pow(ratio, j);
  Eigen::MatrixXd x = u * sigma.asDiagonal() * v.transpose();
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] += 1e-3 * gauss();
  return x.cast<float>();
}

// sin of the largest principal angle between the column spans of a and b:
// ‖(I - P_b) Q_a‖_2 with Q_a, Q_b orthonormal bases (re-orthonormalised in
// double, so that the float rounding of the columns does not count; the
// sine is computed from the residual, not from a cosine near 1).
inline double LargestAngleSine(const kcagc::Matrix& a, const kcagc::Matrix& b) {
  const Eigen::MatrixXd qa = test::OrthonormalColumns(a.cast<double>());
  const Eigen::MatrixXd qb = test::OrthonormalColumns(b.cast<double>());
  const Eigen::MatrixXd residual = qa - qb * (qb.transpose() * qa);
  return test::LargestSingularValue(residual);
}

}  // namespace nodefl::kcagc_test
