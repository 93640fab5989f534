// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/cluster_histograms.h"

#include "nodefl/protocol/fedwalk/histogram_format.h"

namespace nodefl::server::fedwalk {

using nodefl::fedwalk::kAbsentCluster;

ClusterHistograms::ClusterHistograms(std::vector<uint16_t> partition, uint32_t clusters)
    : partition_(std::move(partition)), clusters_(clusters) {
  const size_t n = partition_.size();
  rows_.resize(n);
  present_.assign(n, 0);
  member_offsets_.assign(size_t{clusters_} + 1, 0);
  for (uint16_t c : partition_) {
    if (c != kAbsentCluster && c < clusters_) ++member_offsets_[c + 1];
  }
  for (uint32_t c = 0; c < clusters_; ++c) member_offsets_[c + 1] += member_offsets_[c];
  members_.resize(member_offsets_.back());
  std::vector<uint64_t> at(member_offsets_.begin(), member_offsets_.end() - 1);
  for (uint32_t v = 0; v < n; ++v) {
    const uint16_t c = partition_[v];
    if (c != kAbsentCluster && c < clusters_) members_[at[c]++] = v;
  }
}

std::span<const uint32_t> ClusterHistograms::members(uint32_t c) const {
  return std::span<const uint32_t>(members_).subspan(member_offsets_[c], member_offsets_[c + 1] - member_offsets_[c]);
}

bool ClusterHistograms::SetRow(uint32_t vertex, std::span<const int32_t> cells) {
  if (vertex >= partition_.size() || partition_[vertex] == kAbsentCluster || partition_[vertex] >= clusters_ ||
      cells.size() != clusters_) {
    return false;
  }
  std::vector<HistogramCell>& row = rows_[vertex];
  row.clear();
  for (uint32_t c = 0; c < clusters_; ++c) {
    if (cells[c] > 0 && member_offsets_[c + 1] > member_offsets_[c]) {
      row.push_back(HistogramCell{static_cast<uint16_t>(c), static_cast<uint32_t>(cells[c])});
    }
  }
  row.shrink_to_fit();
  if (present_[vertex] == 0) ++present_count_;
  present_[vertex] = 1;
  return true;
}

uint64_t ClusterHistograms::RowMass(uint32_t v) const {
  uint64_t sum = 0;
  for (const HistogramCell& cell : rows_[v]) sum += cell.count;
  return sum;
}

}  // namespace nodefl::server::fedwalk
