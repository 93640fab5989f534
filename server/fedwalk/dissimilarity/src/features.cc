// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/features.h"

#include <cmath>

#include "nodefl/core/assert.h"
#include "nodefl/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {
namespace {

uint32_t PaddedRows(uint32_t rows) { return (rows + kMatrixLanes - 1) / kMatrixLanes * kMatrixLanes; }

}  // namespace

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
    if (!std::isfinite(value)) return Status::InvalidArgument();
  }
  const uint32_t pitch = PaddedRows(rows);
  const size_t start = floats_.size();
  floats_.resize(start + size_t{pitch} * bins_, 0.0f);  // zero padding included
  float* columns = floats_.data() + start;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < bins_; ++c) columns[size_t{c} * pitch + r] = rows_row_major[size_t{r} * bins_ + c];
  }
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
    // Each vertex pads at most kMatrixLanes - 1 rows.
    floats_.reserve((total_rows + uint64_t{vertices} * (kMatrixLanes - 1)) * bins_);
  } else {
    counts_.reserve(size_t{vertices} * bins_ * buckets_);
  }
}

OrderedMatrixView FeatureStore::matrix(uint32_t v) const {
  NODEFL_CHECK(kind_ == Kind::kOrderedMatrices && v < size());
  return OrderedMatrixView{floats_.data() + offsets_[v], rows_[v], PaddedRows(rows_[v]), bins_};
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
