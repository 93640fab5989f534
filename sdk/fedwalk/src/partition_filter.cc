// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/partition_filter.h"

#include "nodefl/core/assert.h"

namespace nodefl::fedwalk {

void PartitionFilter::Begin(Span<HistogramNeighbour> neighbours, uint32_t clusters, uint32_t vertex_count) {
  neighbours_ = neighbours;
  clusters_ = clusters;
  vertex_count_ = vertex_count;
  seen_ = 0;
  cursor_ = 0;
  low_byte_ = 0;
  placed_ = 0;
  invalid_ = false;
  for (HistogramNeighbour& n : neighbours_) n.cluster = kAbsentCluster;
}

void PartitionFilter::Feed(uint64_t offset, ConstByteSpan data) {
  // The receiver delivers pieces in order; anything else is a caller bug.
  NODEFL_CHECK(offset == seen_);
  const uint64_t total = PartitionArtefactBytes(vertex_count_);
  if (offset + data.size() > total) {
    invalid_ = true;
    seen_ = offset + data.size();
    return;
  }
  // Every entry is checked, not only the neighbours': a malformed artefact
  // is refused as a whole, so no device acts on a partition another device
  // would reject.
  for (size_t i = 0; i < data.size(); ++i) {
    const uint64_t p = offset + i;
    if (p % kPartitionEntryBytes == 0) {
      low_byte_ = data[i];
      continue;
    }
    const uint16_t cluster = static_cast<uint16_t>(low_byte_ | uint16_t{data[i]} << 8);
    const uint64_t vertex = p / kPartitionEntryBytes;
    if (cluster >= clusters_ && cluster != kAbsentCluster) invalid_ = true;
    while (cursor_ < neighbours_.size() && neighbours_[cursor_].id < vertex) ++cursor_;
    if (cursor_ < neighbours_.size() && neighbours_[cursor_].id == vertex) {
      neighbours_[cursor_++].cluster = cluster < clusters_ ? cluster : kAbsentCluster;
    }
  }
  seen_ = offset + data.size();
}

Status PartitionFilter::Finish() {
  placed_ = 0;
  if (invalid_ || seen_ != PartitionArtefactBytes(vertex_count_)) {
    for (HistogramNeighbour& n : neighbours_) n.cluster = kAbsentCluster;
    return Status::DataLoss();
  }
  for (const HistogramNeighbour& n : neighbours_) {
    if (n.cluster != kAbsentCluster) ++placed_;
  }
  return Status::Ok();
}

}  // namespace nodefl::fedwalk
