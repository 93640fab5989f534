// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/cluster_histogram.h"

#include <cstdint>

#include "nodefl/privacy/discrete_laplace.h"

namespace nodefl::fedwalk {
namespace {

void Zero(Span<int32_t> cells) {
  for (int32_t& c : cells) c = 0;
}

Status NoiseUnchecked(Drbg& rng, double epsilon, Span<int32_t> cells, double* epsilon_spent) {
  if (epsilon_spent == nullptr || cells.empty()) return Status::InvalidArgument();
  constexpr uint32_t kSensitivity = 1;  // one edge moves one cell by one
  NODEFL_TRY_ASSIGN(const DiscreteLaplaceScale scale, DiscreteLaplaceScaleFor(epsilon, kSensitivity));
  NODEFL_TRY_ASSIGN(const double delivered, DiscreteLaplaceEpsilon(scale, kSensitivity));
  for (int32_t& cell : cells) {
    NODEFL_TRY_ASSIGN(const int64_t noised, DiscreteLaplaceMechanism(rng, cell, scale));
    // Clamping a released value is post-processing: the guarantee stands.
    cell = noised > INT32_MAX ? INT32_MAX : (noised < INT32_MIN ? INT32_MIN : static_cast<int32_t>(noised));
  }
  NODEFL_TRY(rng.status());
  *epsilon_spent = delivered;
  return Status::Ok();
}

}  // namespace

Status CountClusterNeighbours(Span<const HistogramNeighbour> neighbours, Span<int32_t> cells) {
  Zero(cells);
  for (const HistogramNeighbour& n : neighbours) {
    if (n.cluster == kAbsentCluster) continue;
    if (n.cluster >= cells.size()) {
      Zero(cells);
      return Status::InvalidArgument();
    }
    ++cells[n.cluster];
  }
  return Status::Ok();
}

Status NoiseClusterHistogram(Drbg& rng, double epsilon, Span<int32_t> cells, double* epsilon_spent) {
  if (epsilon_spent != nullptr) *epsilon_spent = 0.0;
  const Status status = NoiseUnchecked(rng, epsilon, cells, epsilon_spent);
  if (!status.ok()) {
    // A partly noised histogram must not be mistaken for a release.
    Zero(cells);
    if (epsilon_spent != nullptr) *epsilon_spent = 0.0;
  }
  return status;
}

Status MakeClusterHistogram(Drbg& rng, double epsilon, Span<const HistogramNeighbour> neighbours,
                            Span<int32_t> cells, double* epsilon_spent) {
  if (epsilon_spent != nullptr) *epsilon_spent = 0.0;
  NODEFL_TRY(CountClusterNeighbours(neighbours, cells));
  return NoiseClusterHistogram(rng, epsilon, cells, epsilon_spent);
}

}  // namespace nodefl::fedwalk
