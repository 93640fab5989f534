// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/degree_features.h"

#include <cmath>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/privacy/discrete_laplace.h"

namespace nodefl::fedwalk {

Status AddNeighbourToBinCounts(uint8_t bin, Span<uint32_t> counts) {
  if (bin == kAbsentBin) return Status::Ok();
  if (bin >= counts.size()) return Status::InvalidArgument();
  ++counts[bin];
  return Status::Ok();
}

Status CountNeighboursPerBin(Span<const uint8_t> neighbour_bins, uint32_t bins, Span<uint32_t> counts) {
  if (counts.size() != bins) return Status::InvalidArgument();
  for (uint32_t& c : counts) c = 0;
  for (uint8_t bin : neighbour_bins) NODEFL_TRY(AddNeighbourToBinCounts(bin, counts));
  return Status::Ok();
}

bool IsFiniteRow(ConstByteSpan row) {
  for (size_t at = 0; at + 4 <= row.size(); at += 4) {
    if (!std::isfinite(LoadF32Le(row.data() + at))) return false;
  }
  return true;
}

double EstimatedDegree(ConstByteSpan row) {
  double sum = 0.0;
  for (size_t at = 0; at + 4 <= row.size(); at += 4) sum += static_cast<double>(LoadF32Le(row.data() + at));
  return sum;
}

void SortByEstimatedDegree(Span<DegreeKey> keys) {
  HeapSortPositions(
      keys.size(), [&keys](size_t i, size_t j) { return DegreeKeyLess(keys[i], keys[j]); },
      [&keys](size_t i, size_t j) {
        const DegreeKey t = keys[i];
        keys[i] = keys[j];
        keys[j] = t;
      });
}

namespace {

bool HistogramShapeOk(uint32_t bins, uint32_t buckets) {
  return bins >= 1 && bins <= kMaxBins && buckets >= kMinBuckets && buckets <= kMaxBuckets;
}

}  // namespace

Status AddRowToDegreeHistogram(ConstByteSpan row, uint32_t bins, uint32_t buckets,
                               Span<int32_t> histogram) {
  if (!HistogramShapeOk(bins, buckets) || row.size() != size_t{bins} * 4 ||
      histogram.size() != size_t{bins} * buckets) {
    return Status::InvalidArgument();
  }
  for (uint32_t i = 0; i < bins; ++i) {
    const double value = static_cast<double>(LoadF32Le(row.data() + 4 * i));
    int32_t& cell = histogram[i * buckets + HistogramBucket(value, buckets)];
    if (cell < INT32_MAX) ++cell;
  }
  return Status::Ok();
}

Status BuildDegreeHistogram(ConstByteSpan rows, uint32_t bins, uint32_t buckets, Span<int32_t> out) {
  if (!HistogramShapeOk(bins, buckets) || out.size() != size_t{bins} * buckets) {
    return Status::InvalidArgument();
  }
  const size_t row_bytes = size_t{bins} * 4;
  if (rows.size() % row_bytes != 0) return Status::InvalidArgument();
  for (int32_t& cell : out) cell = 0;
  for (size_t at = 0; at < rows.size(); at += row_bytes) {
    NODEFL_TRY(AddRowToDegreeHistogram(rows.subspan(at, row_bytes), bins, buckets, out));
  }
  return Status::Ok();
}

namespace {

Status NoiseHistogramUnchecked(Drbg& rng, double epsilon, uint32_t bins, Span<int32_t> cells,
                               double* epsilon_spent) {
  if (epsilon_spent == nullptr || bins == 0 || cells.empty() || cells.size() % bins != 0) {
    return Status::InvalidArgument();
  }
  NODEFL_TRY_ASSIGN(const DiscreteLaplaceScale scale, DiscreteLaplaceScaleFor(epsilon, bins));
  NODEFL_TRY_ASSIGN(const double delivered, DiscreteLaplaceEpsilon(scale, bins));
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

Status NoiseHistogram(Drbg& rng, double epsilon, uint32_t bins, Span<int32_t> cells,
                      double* epsilon_spent) {
  if (epsilon_spent != nullptr) *epsilon_spent = 0.0;
  const Status status = NoiseHistogramUnchecked(rng, epsilon, bins, cells, epsilon_spent);
  if (!status.ok()) {
    // A partly noised histogram must not be mistaken for a release.
    for (int32_t& cell : cells) cell = 0;
  }
  return status;
}

}  // namespace nodefl::fedwalk
