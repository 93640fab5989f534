// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/dissimilarity/features.h"

#include <algorithm>
#include <cmath>

#include "nodefl/core/assert.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {
namespace {

uint32_t Pitch(uint32_t rows) {
  return rows == 0 ? 0 : (rows + kMatrixLanes - 1) / kMatrixLanes * kMatrixLanes + kMatrixLanes;
}

}  // namespace

size_t OrderedMatrixFloats(uint32_t rows, uint32_t k) {
  return rows == 0 ? 0 : kMatrixLanes + size_t{k} * Pitch(rows);
}

OrderedMatrixView PackOrderedMatrix(const float* row_major, uint32_t rows, uint32_t k, float* out) {
  const uint32_t pitch = Pitch(rows);
  if (rows == 0) return OrderedMatrixView{out, 0, 0, k};
  std::fill(out, out + OrderedMatrixFloats(rows, k), 0.0f);
  float* columns = out + kMatrixLanes;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < k; ++c) columns[size_t{c} * pitch + r] = row_major[size_t{r} * k + c];
  }
  return OrderedMatrixView{columns, rows, pitch, k};
}

Result<FeatureStore> FeatureStore::OrderedMatrices(uint32_t k) {
  if (k < 1 || k > nodefl::fedwalk::kMaxBins) return Status::InvalidArgument();
  FeatureStore store(Kind::kOrderedMatrices, k, 0);
  store.offsets_.push_back(0);
  return store;
}

Result<FeatureStore> FeatureStore::Histograms(uint32_t bins, uint32_t buckets) {
  if (bins < 1 || bins > nodefl::fedwalk::kMaxBins) return Status::InvalidArgument();
  if (buckets < nodefl::fedwalk::kMinBuckets || buckets > nodefl::fedwalk::kMaxBuckets) {
    return Status::InvalidArgument();
  }
  FeatureStore store(Kind::kHistograms, bins, buckets);
  store.offsets_.push_back(0);
  return store;
}

Status FeatureStore::AddOrderedMatrix(std::span<const float> rows_row_major, uint32_t rows) {
  if (kind_ != Kind::kOrderedMatrices || rows > kMaxMatrixRows) return Status::InvalidArgument();
  if (rows_row_major.size() != size_t{rows} * bins_) return Status::InvalidArgument();
  for (const float value : rows_row_major) {
    if (!(std::fabs(value) <= kMaxMatrixValue)) return Status::InvalidArgument();  // also NaN
  }
  const size_t start = floats_.size();
  floats_.resize(start + OrderedMatrixFloats(rows, bins_));
  (void)PackOrderedMatrix(rows_row_major.data(), rows, bins_, floats_.data() + start);
  rows_.push_back(rows);
  offsets_.push_back(floats_.size());
  total_rows_ += rows;
  return Status::Ok();
}

Status FeatureStore::AddHistogram(std::span<const int32_t> counts) {
  if (kind_ != Kind::kHistograms) return Status::InvalidArgument();
  if (counts.size() != size_t{bins_} * buckets_) return Status::InvalidArgument();
  counts_.insert(counts_.end(), counts.begin(), counts.end());
  rows_.push_back(0);
  offsets_.push_back(counts_.size());
  return Status::Ok();
}

void FeatureStore::Reserve(uint32_t vertices, uint64_t total_rows) {
  rows_.reserve(vertices);
  offsets_.reserve(size_t{vertices} + 1);
  if (kind_ == Kind::kOrderedMatrices) {
    // Each vertex pads at most 2 * kMatrixLanes - 1 rows per column, plus
    // the leading guard.
    floats_.reserve((total_rows + uint64_t{vertices} * (2 * kMatrixLanes - 1)) * bins_ +
                    uint64_t{vertices} * kMatrixLanes);
  } else {
    counts_.reserve(size_t{vertices} * bins_ * buckets_);
  }
}

OrderedMatrixView FeatureStore::matrix(uint32_t v) const {
  NODEFL_CHECK(kind_ == Kind::kOrderedMatrices && v < size());
  if (rows_[v] == 0) return OrderedMatrixView{nullptr, 0, 0, bins_};
  return OrderedMatrixView{floats_.data() + offsets_[v] + kMatrixLanes, rows_[v], Pitch(rows_[v]), bins_};
}

const int32_t* FeatureStore::histogram(uint32_t v) const {
  NODEFL_CHECK(kind_ == Kind::kHistograms && v < size());
  return counts_.data() + offsets_[v];
}

size_t FeatureStore::bytes() const {
  return rows_.capacity() * sizeof(uint32_t) + offsets_.capacity() * sizeof(uint64_t) +
         floats_.capacity() * sizeof(float) + counts_.capacity() * sizeof(int32_t);
}

}  // namespace nodefl::server::fedwalk
