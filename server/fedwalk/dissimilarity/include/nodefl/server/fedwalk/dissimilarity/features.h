// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FeatureStore: every vertex's structural feature, as uploaded in round 2 of
// the FedWalk HCT job (Sec. 4.2), held in one
// contiguous array so that the all-pairs pass streams memory instead of
// chasing one allocation per vertex.
//
// Two kinds, one per privacy mode:
//   * ordered degree matrices (paper mode, Eq. 5): vertex v has rows(v) rows
//     of k floats (k = bins). Stored COLUMN-major per vertex (layout below).
//     Why: the DTW kernel reads, for 8 outer rows at once, a window of 8
//     consecutive inner rows of one column; with contiguous, zero-guarded
//     columns that is a single unaligned vector load with no bounds checks.
//   * histograms (strict mode): bins x buckets int32 per vertex, row-major,
//     exactly the kDegreeHistogram artefact, compared with HistogramEmd.
//
// Vertices are numbered 0 .. size()-1 in insertion order. A vertex with no
// rows (no neighbours) is allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/status.h"

namespace nodefl::server::fedwalk {

// Layout of one ordered matrix with r > 0 rows (an empty matrix takes no
// space): kMatrixLanes zero floats, then k columns of `pitch` floats each,
// pitch = r rounded up to a multiple of kMatrixLanes, plus kMatrixLanes.
// Every column therefore has at least kMatrixLanes zeros on both sides, so a
// kernel may read up to kMatrixLanes - 1 rows before row 0 and after the last
// row of any column.
inline constexpr uint32_t kMatrixLanes = 8;

// Largest row count one vertex may have. Far above any real degree; it keeps
// every pitch (rows + up to 15) inside uint32_t and rejects nonsense sizes
// before they become allocations.
inline constexpr uint32_t kMaxMatrixRows = 1u << 26;

// Largest magnitude of a matrix value. An honest value is a noised neighbour
// count, far below this; the bound keeps every float L1 distance (at most
// 16 * 2 * 2^30) and every DTW cost finite, so no upload can turn a
// dissimilarity into infinity.
inline constexpr float kMaxMatrixValue = 1073741824.0f;  // 2^30

// A read-only view of one vertex's ordered degree matrix, column-major:
// value (row r, column c) is columns[c * pitch + r]; the guard rows around
// each column (see kMatrixLanes) are zero.
struct OrderedMatrixView {
  const float* columns = nullptr;
  uint32_t rows = 0;
  uint32_t pitch = 0;  // multiple of kMatrixLanes, >= rows + kMatrixLanes
  uint32_t k = 0;      // columns (bins)

  float at(uint32_t row, uint32_t column) const { return columns[size_t{column} * pitch + row]; }
};

// Floats taken by a `rows` x k matrix in the layout above.
size_t OrderedMatrixFloats(uint32_t rows, uint32_t k);
// Writes a row-major `rows` x k matrix into `out` (OrderedMatrixFloats
// floats) in the layout above and returns its view.
OrderedMatrixView PackOrderedMatrix(const float* row_major, uint32_t rows, uint32_t k, float* out);

class FeatureStore {
 public:
  enum class Kind : uint8_t { kOrderedMatrices, kHistograms };

  // kInvalidArgument unless 1 <= k <= kMaxBins.
  static Result<FeatureStore> OrderedMatrices(uint32_t k);
  // kInvalidArgument unless 1 <= bins <= kMaxBins and kMinBuckets <= buckets
  // <= kMaxBuckets (the ranges of hct_format.h).
  static Result<FeatureStore> Histograms(uint32_t bins, uint32_t buckets);

  // Appends the next vertex's matrix: `rows` rows of k floats, row-major (the
  // kOrderedMatrix artefact's body). kInvalidArgument if this store holds
  // histograms, if the span's size is not rows * k, if rows exceeds
  // kMaxMatrixRows, or if any value is NaN or beyond +-kMaxMatrixValue (a
  // NaN would poison every min() in the DTW, a huge value make distances
  // infinite; a device's upload must not be able to do either).
  Status AddOrderedMatrix(std::span<const float> rows_row_major, uint32_t rows);
  // Appends the next vertex's histogram: bins * buckets counts, row-major.
  // kInvalidArgument if this store holds matrices or the size is wrong.
  Status AddHistogram(std::span<const int32_t> counts);

  // Optional: avoids regrowing the arrays while a job's uploads arrive.
  void Reserve(uint32_t vertices, uint64_t total_rows);

  Kind kind() const { return kind_; }
  uint32_t size() const { return static_cast<uint32_t>(rows_.size()); }
  uint32_t bins() const { return bins_; }
  uint32_t buckets() const { return buckets_; }  // 0 for ordered matrices
  // Rows of vertex v's ordered matrix; 0 for histograms.
  uint32_t rows(uint32_t v) const { return rows_[v]; }
  uint64_t total_rows() const { return total_rows_; }

  // Only for kOrderedMatrices.
  OrderedMatrixView matrix(uint32_t v) const;
  // Only for kHistograms: bins * buckets counts, row-major.
  const int32_t* histogram(uint32_t v) const;

  // Memory held by the store (capacity, not just size).
  size_t bytes() const;

 private:
  FeatureStore(Kind kind, uint32_t bins, uint32_t buckets) : kind_(kind), bins_(bins), buckets_(buckets) {}

  Kind kind_;
  uint32_t bins_;
  uint32_t buckets_;
  uint64_t total_rows_ = 0;
  std::vector<uint32_t> rows_;       // per vertex (all zero for histograms)
  std::vector<uint64_t> offsets_;    // per vertex + 1: start in floats_/counts_
  std::vector<float> floats_;        // ordered matrices, column-major, padded
  std::vector<int32_t> counts_;      // histograms
};

}  // namespace nodefl::server::fedwalk
