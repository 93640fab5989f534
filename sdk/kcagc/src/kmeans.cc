// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/kmeans.h"

#include <Eigen/Dense>
#include <limits>

namespace nodefl::kcagc {

std::vector<float> SquaredDistances(const Matrix& points, const Matrix& centres) {
  const Eigen::Index n = points.rows(), k = centres.rows();
  std::vector<float> out(static_cast<size_t>(n * k));
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index r = 0; r < k; ++r) out[static_cast<size_t>(i * k + r)] = (points.row(i) - centres.row(r)).squaredNorm();
  }
  return out;
}

std::vector<float> DistancesToPoint(const Matrix& points, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(points.rows()));
  for (Eigen::Index i = 0; i < points.rows(); ++i) out[static_cast<size_t>(i)] = (points.row(i) - points.row(seed)).squaredNorm();
  return out;
}

SeedSampler::SeedSampler(uint32_t points, Span<const double> weights, uint64_t seed)
    : points_(points),
      weights_(weights.size() == points ? std::vector<double>(weights.begin(), weights.end())
                                        : std::vector<double>(points, 1.0)),
      nearest_(points, std::numeric_limits<double>::infinity()),
      chosen_(points, false),
      rng_(seed) {}

uint32_t SeedSampler::Draw(const std::vector<double>& mass) {
  double total = 0.0;
  for (double m : mass) total += m;
  if (total > 0.0) {
    const double target = rng_.Uniform() * total;
    double run = 0.0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < points_; ++i) {
      if (mass[i] <= 0.0) continue;
      last = i;
      run += mass[i];
      if (target < run) return i;
    }
    return last;  // rounding at the end of the sum
  }
  for (uint32_t i = 0; i < points_; ++i) {
    if (!chosen_[i] && weights_[i] > 0.0) return i;
  }
  for (uint32_t i = 0; i < points_; ++i) {
    if (!chosen_[i]) return i;
  }
  return seeds_.empty() ? 0 : seeds_.front();
}

uint32_t SeedSampler::First() {
  const uint32_t s = Draw(weights_);
  seeds_.push_back(s);
  chosen_[s] = true;
  return s;
}

Status SeedSampler::Observe(Span<const float> d) {
  if (d.size() != points_) return Status::InvalidArgument();
  for (uint32_t i = 0; i < points_; ++i) {
    const double v = d[i] > 0.0f ? d[i] : 0.0;  // a summed distance can round below 0
    if (v < nearest_[i]) nearest_[i] = v;
  }
  return Status::Ok();
}

uint32_t SeedSampler::Next() {
  std::vector<double> mass(points_);
  for (uint32_t i = 0; i < points_; ++i) mass[i] = chosen_[i] ? 0.0 : weights_[i] * nearest_[i];
  const uint32_t s = Draw(mass);
  seeds_.push_back(s);
  chosen_[s] = true;
  return s;
}

Result<std::vector<uint32_t>> KMeansPlusPlus(const Matrix& points, Span<const double> weights, uint32_t k,
                                             uint64_t seed) {
  const auto n = static_cast<uint32_t>(points.rows());
  if (k == 0 || n == 0 || (!weights.empty() && weights.size() != n)) return Status::InvalidArgument();
  SeedSampler sampler(n, weights, seed);
  uint32_t latest = sampler.First();
  while (sampler.seeds().size() < k) {
    const std::vector<float> d = DistancesToPoint(points, latest);
    NODEFL_TRY(sampler.Observe(d));
    latest = sampler.Next();
  }
  return sampler.seeds();
}

Assignment AssignNearest(Span<const float> d, size_t n, uint32_t k) {
  Assignment out(n, kUnassigned);
  for (size_t i = 0; i < n; ++i) {
    const float* row = d.data() + i * k;
    uint32_t best = 0;
    for (uint32_t r = 1; r < k; ++r) {
      if (row[r] < row[best]) best = r;
    }
    out[i] = k == 0 ? kUnassigned : static_cast<int32_t>(best);
  }
  return out;
}

Assignment AssignOneNinth(Span<const float> d, size_t n, uint32_t k) {
  Assignment out(n, kUnassigned);
  if (k == 0) return out;
  for (size_t i = 0; i < n; ++i) {
    const float* row = d.data() + i * k;
    uint32_t best = 0;
    for (uint32_t r = 1; r < k; ++r) {
      if (row[r] < row[best]) best = r;
    }
    bool clear = true;
    for (uint32_t s = 0; s < k && clear; ++s) {
      if (s != best && 9.0 * double{row[best]} > double{row[s]}) clear = false;
    }
    if (clear) out[i] = static_cast<int32_t>(best);
  }
  return out;
}

Result<std::vector<double>> UpdateCentres(const Matrix& points, Span<const double> weights,
                                          const Assignment& assignment, Matrix* centres) {
  const Eigen::Index n = points.rows();
  if (centres == nullptr || centres->cols() != points.cols() || assignment.size() != static_cast<size_t>(n) ||
      (!weights.empty() && weights.size() != static_cast<size_t>(n))) {
    return Status::InvalidArgument();
  }
  const Eigen::Index k = centres->rows();
  Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(k, points.cols());
  std::vector<double> mass(static_cast<size_t>(k), 0.0);
  for (Eigen::Index i = 0; i < n; ++i) {
    const int32_t r = assignment[static_cast<size_t>(i)];
    if (r == kUnassigned) continue;
    if (r < 0 || r >= k) return Status::InvalidArgument();
    const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(i)];
    if (w == 0.0) continue;
    sums.row(r) += w * points.row(i).cast<double>();
    mass[static_cast<size_t>(r)] += w;
  }
  for (Eigen::Index r = 0; r < k; ++r) {
    if (mass[static_cast<size_t>(r)] > 0.0) centres->row(r) = (sums.row(r) / mass[static_cast<size_t>(r)]).cast<float>();
  }
  return mass;
}

double Inertia(const Matrix& points, Span<const double> weights, const Assignment& assignment, const Matrix& centres) {
  double total = 0.0;
  for (Eigen::Index i = 0; i < points.rows(); ++i) {
    const int32_t r = assignment[static_cast<size_t>(i)];
    if (r < 0 || r >= centres.rows()) continue;
    const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(i)];
    total += w * (points.row(i) - centres.row(r)).cast<double>().squaredNorm();
  }
  return total;
}

Result<LloydResult> Lloyd(const Matrix& points, Span<const double> weights, Matrix* centres, uint32_t max_iterations,
                          const Assignment* previous) {
  if (centres == nullptr || centres->cols() != points.cols() || centres->rows() == 0) return Status::InvalidArgument();
  const auto k = static_cast<uint32_t>(centres->rows());
  LloydResult result;
  if (previous != nullptr) result.assignment = *previous;
  for (uint32_t t = 0; t < max_iterations; ++t) {
    const std::vector<float> d = SquaredDistances(points, *centres);
    Assignment next = AssignNearest(d, static_cast<size_t>(points.rows()), k);
    ++result.iterations;
    if (next == result.assignment) {
      result.converged = true;
      break;
    }
    result.assignment = std::move(next);
    NODEFL_TRY_ASSIGN(std::vector<double> mass, UpdateCentres(points, weights, result.assignment, centres));
    (void)mass;
  }
  if (max_iterations == 0) {
    // No iteration: the nearest centres, so that every point is assigned.
    const std::vector<float> d = SquaredDistances(points, *centres);
    result.assignment = AssignNearest(d, static_cast<size_t>(points.rows()), k);
  }
  return result;
}

}  // namespace nodefl::kcagc
