// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/neighbour_filters.h"

#include <cstring>

#include "nodefl/core/assert.h"
#include "nodefl/fedwalk/degree_features.h"

namespace nodefl::fedwalk {

// ---- BinPlanFilter ------------------------------------------------------------

void BinPlanFilter::Begin(Span<HctNeighbour> neighbours, uint32_t bins, uint32_t vertex_count,
                          ByteSpan keep) {
  neighbours_ = neighbours;
  bins_ = bins;
  vertex_count_ = vertex_count;
  keep_ = keep;
  keep_whole_ = keep.size() >= vertex_count;
  seen_ = 0;
  cursor_ = 0;
  binned_ = 0;
  invalid_ = false;
  for (HctNeighbour& n : neighbours_) n.bin = kAbsentBin;
}

void BinPlanFilter::Feed(uint64_t offset, ConstByteSpan data) {
  // The receiver delivers pieces in order; anything else is a caller bug.
  NODEFL_CHECK(offset == seen_);
  const uint64_t end = offset + data.size();
  if (end > vertex_count_) {
    // Bytes beyond the plan: invalid, but still consumed, so the next piece
    // (at end) is in order rather than tripping the check above.
    invalid_ = true;
    seen_ = end;
    return;
  }
  for (uint8_t b : data) {
    if (b >= bins_ && b != kAbsentBin) invalid_ = true;
  }
  if (keep_whole_) std::memcpy(keep_.data() + offset, data.data(), data.size());
  // Neighbours with id < offset were handled by earlier pieces.
  while (cursor_ < neighbours_.size() && neighbours_[cursor_].id < end) {
    HctNeighbour& n = neighbours_[cursor_++];
    const uint8_t b = data[static_cast<size_t>(n.id - offset)];
    n.bin = b < bins_ ? b : kAbsentBin;
    if (n.bin != kAbsentBin) ++binned_;
  }
  seen_ = end;
}

Status BinPlanFilter::Finish() const {
  return (invalid_ || seen_ != vertex_count_) ? Status::DataLoss() : Status::Ok();
}

// ---- DictionaryFilter -----------------------------------------------------------

void DictionaryFilter::Begin(Span<HctNeighbour> neighbours, uint32_t bins, uint32_t vertex_count) {
  neighbours_ = neighbours;
  bins_ = bins;
  vertex_count_ = vertex_count;
  seen_ = 0;
  cursor_ = 0;
  for (HctNeighbour& n : neighbours_) {
    n.in_dictionary = false;
    n.estimated_degree = 0.0;
    std::memset(n.row_bytes, 0, sizeof(n.row_bytes));
  }
}

void DictionaryFilter::Feed(uint64_t offset, ConstByteSpan data) {
  NODEFL_CHECK(offset == seen_);
  const uint64_t row_bytes = uint64_t{bins_} * 4;
  const uint64_t end = offset + data.size();
  while (cursor_ < neighbours_.size() && neighbours_[cursor_].id < vertex_count_) {
    HctNeighbour& n = neighbours_[cursor_];
    const uint64_t row_start = uint64_t{n.id} * row_bytes;
    const uint64_t row_end = row_start + row_bytes;
    if (row_start >= end) break;  // its row starts in a later piece
    const uint64_t lo = row_start > offset ? row_start : offset;
    const uint64_t hi = row_end < end ? row_end : end;
    if (lo < hi) {
      std::memcpy(n.row_bytes + (lo - row_start), data.data() + (lo - offset),
                  static_cast<size_t>(hi - lo));
    }
    if (row_end > end) break;  // the rest of this row comes with the next piece
    ++cursor_;
  }
  seen_ = end;
}

uint32_t DictionaryFilter::Finish() {
  const uint64_t row_bytes = uint64_t{bins_} * 4;
  const bool whole = seen_ == uint64_t{vertex_count_} * row_bytes;
  uint32_t present = 0;
  for (size_t i = 0; i < neighbours_.size(); ++i) {
    HctNeighbour& n = neighbours_[i];
    const ConstByteSpan row(n.row_bytes, static_cast<size_t>(row_bytes));
    n.in_dictionary = whole && i < cursor_ && IsFiniteRow(row);
    n.estimated_degree = n.in_dictionary ? EstimatedDegree(row) : 0.0;
    if (n.in_dictionary) ++present;
  }
  return present;
}

}  // namespace nodefl::fedwalk
