// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/sim/collaborative.h"

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/server/kcagc/assignment.h"

namespace nodefl::server::kcagc {

using nodefl::kcagc::Assignment;
using nodefl::kcagc::Matrix;

namespace {

bool SameRows(std::span<const Matrix> points, std::span<const double> weights) {
  if (points.empty() || points.front().rows() == 0) return false;
  for (const Matrix& p : points) {
    if (p.rows() != points.front().rows()) return false;
  }
  return weights.empty() || weights.size() == static_cast<size_t>(points.front().rows());
}

Span<const double> AsSpan(std::span<const double> w) { return Span<const double>(w.data(), w.size()); }

}  // namespace

Result<LloydOutcome> CollaborativeLloyd(std::span<const Matrix> points, std::span<const double> weights,
                                        std::span<Matrix> centres, const Assignment* previous,
                                        uint32_t max_iterations, const nodefl::secagg::FixedPoint& code,
                                        Aggregator* aggregator) {
  if (!SameRows(points, weights) || centres.size() != points.size() || max_iterations == 0 || aggregator == nullptr) {
    return Status::InvalidArgument();
  }
  const auto n = static_cast<size_t>(points.front().rows());
  const auto c = static_cast<uint32_t>(centres.front().rows());
  for (size_t l = 0; l < points.size(); ++l) {
    if (centres[l].rows() != c || centres[l].cols() != points[l].cols()) return Status::InvalidArgument();
  }
  LloydOutcome out;
  if (previous != nullptr) out.assignment = *previous;
  std::vector<std::vector<float>> inputs(points.size());
  std::vector<float> sums;
  for (uint32_t t = 0; t < max_iterations; ++t) {
    // Lines 24-29: every participant's d^l_{i,r}, summed securely.
    for (size_t l = 0; l < points.size(); ++l) inputs[l] = nodefl::kcagc::DistanceContributions(points[l], centres[l]);
    NODEFL_TRY_ASSIGN(sums, aggregator->Sum(inputs, code));
    // Line 30: P_L assigns and tells everyone.
    NODEFL_TRY_ASSIGN(AssignmentStep step,
                      AssignFromSums(sums, n, c, AssignRule::kNearest, out.assignment.empty() ? nullptr : &out.assignment));
    ++out.iterations;
    out.inertia = 0.0;
    for (size_t i = 0; i < n; ++i) {
      out.inertia += (weights.empty() ? 1.0 : weights[i]) * sums[i * c + static_cast<size_t>(step.assignment[i])];
    }
    if (step.assignment == out.assignment) {
      out.converged = true;
      break;
    }
    out.assignment = std::move(step.assignment);
    // Lines 32-36: each participant updates its slice of the centres.
    for (size_t l = 0; l < points.size(); ++l) {
      NODEFL_TRY_ASSIGN(const std::vector<double> mass,
                        nodefl::kcagc::UpdateCentres(points[l], AsSpan(weights), out.assignment, &centres[l]));
      (void)mass;
    }
  }
  return out;
}

namespace {

// One run of the stage from one seeding; `stream` seeds its randomness.
Result<StageResult> OneRun(std::span<const Matrix> points, std::span<const Matrix> projected,
                           std::span<const double> weights, const StageOptions& o, uint64_t stream,
                           const nodefl::secagg::FixedPoint& code, Aggregator* aggregator) {
  const auto n = static_cast<uint32_t>(points.front().rows());
  const uint32_t c = o.centres;
  const size_t parties = points.size();
  StageResult out;
  out.centres.resize(parties);
  std::vector<float> distances(static_cast<size_t>(n) * c);
  std::vector<std::vector<float>> inputs(parties);

  if (o.seeding == Seeding::kJoint) {
    nodefl::kcagc::SeedSampler sampler(n, AsSpan(weights), stream);
    uint32_t s = sampler.First();
    for (uint32_t r = 0; r < c; ++r) {
      for (size_t l = 0; l < parties; ++l) {
        NODEFL_TRY_ASSIGN(inputs[l], nodefl::kcagc::SeedContributions(projected[l], s));
      }
      NODEFL_TRY_ASSIGN(const std::vector<float> sums, aggregator->Sum(inputs, code));
      for (uint32_t i = 0; i < n; ++i) distances[static_cast<size_t>(i) * c + r] = sums[i];
      NODEFL_TRY(sampler.Observe(Span<const float>(sums.data(), sums.size())));
      if (r + 1 < c) s = sampler.Next();
    }
    out.seeds = sampler.seeds();
    for (size_t l = 0; l < parties; ++l) {
      out.centres[l].resize(c, points[l].cols());
      for (uint32_t r = 0; r < c; ++r) out.centres[l].row(r) = points[l].row(out.seeds[r]);
    }
  } else {
    // Protocol 2 line 6 per participant, then lines 8-14 in one secure sum.
    for (size_t l = 0; l < parties; ++l) {
      NODEFL_TRY_ASSIGN(const std::vector<uint32_t> own,
                        nodefl::kcagc::KMeansPlusPlus(projected[l], AsSpan(weights), c,
                                                      nodefl::kcagc::StreamSeed(stream, 1 + l)));
      Matrix seed_rows(c, projected[l].cols());
      out.centres[l].resize(c, points[l].cols());
      for (uint32_t r = 0; r < c; ++r) {
        seed_rows.row(r) = projected[l].row(own[r]);
        out.centres[l].row(r) = points[l].row(own[r]);
      }
      inputs[l] = nodefl::kcagc::DistanceContributions(projected[l], seed_rows);
    }
    NODEFL_TRY_ASSIGN(distances, aggregator->Sum(inputs, code));
  }

  // Line 15: the 1/9 step; lines 17-21: centres from S (a seed whose S_r is
  // empty keeps its own row).
  NODEFL_TRY_ASSIGN(AssignmentStep first, AssignFromSums(distances, n, c, AssignRule::kOneNinth));
  out.unassigned_after_one_ninth = first.unassigned;
  for (size_t l = 0; l < parties; ++l) {
    NODEFL_TRY_ASSIGN(const std::vector<double> mass,
                      nodefl::kcagc::UpdateCentres(points[l], AsSpan(weights), first.assignment, &out.centres[l]));
    (void)mass;
  }
  NODEFL_TRY_ASSIGN(LloydOutcome lloyd, CollaborativeLloyd(points, weights, out.centres, &first.assignment,
                                                           o.iterations, code, aggregator));
  out.assignment = std::move(lloyd.assignment);
  out.iterations = lloyd.iterations;
  out.converged = lloyd.converged;
  out.inertia = lloyd.inertia;
  return out;
}

}  // namespace

Result<StageResult> CollaborativeKMeans(std::span<const Matrix> points, std::span<const Matrix> projected,
                                        std::span<const double> weights, const StageOptions& o,
                                        const nodefl::secagg::FixedPoint& code, Aggregator* aggregator) {
  if (!SameRows(points, weights) || projected.size() != points.size() || o.centres == 0 || o.iterations == 0 ||
      o.restarts == 0 || aggregator == nullptr) {
    return Status::InvalidArgument();
  }
  for (const Matrix& p : projected) {
    if (p.rows() != points.front().rows()) return Status::InvalidArgument();
  }
  const uint64_t stage_stream = nodefl::kcagc::StreamSeed(o.seed, o.stage);
  StageResult best;
  uint32_t total = 0;
  for (uint32_t r = 0; r < o.restarts; ++r) {
    NODEFL_TRY_ASSIGN(StageResult run, OneRun(points, projected, weights, o,
                                              nodefl::kcagc::StreamSeed(stage_stream, r), code, aggregator));
    total += run.iterations;
    if (r == 0 || run.inertia < best.inertia) {
      run.restart = r;
      best = std::move(run);
    }
  }
  best.lloyd_iterations_total = total;
  return best;
}

}  // namespace nodefl::server::kcagc
