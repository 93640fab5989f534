// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/participant_data.h"

#include <algorithm>
#include <numeric>

#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {

GraphView ParticipantData::graph() const {
  GraphView view;
  view.num_nodes = num_nodes;
  view.offsets = Span<const uint64_t>(offsets.data(), offsets.size());
  view.neighbours = Span<const uint32_t>(neighbours.data(), neighbours.size());
  return view;
}

std::vector<std::vector<uint32_t>> SplitFeatureColumns(uint32_t columns, uint32_t participants, uint64_t seed) {
  // The stream id and the steps are server/kcagc/sim's SplitColumns; a test
  // (kcagc_job_test) holds the two equal.
  std::vector<uint32_t> order(columns);
  std::iota(order.begin(), order.end(), 0u);
  SplitMix64 rng(StreamSeed(seed, 0x53504c4954ull));
  for (uint32_t i = columns; i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);  // Fisher-Yates
  std::vector<std::vector<uint32_t>> chunks(participants);
  if (participants == 0) return chunks;
  const uint32_t base = columns / participants, extra = columns % participants;
  uint32_t at = 0;
  for (uint32_t l = 0; l < participants; ++l) {
    const uint32_t size = base + (l < extra ? 1 : 0);
    chunks[l].assign(order.begin() + at, order.begin() + at + size);
    std::sort(chunks[l].begin(), chunks[l].end());
    at += size;
  }
  return chunks;
}

Result<ParticipantData> MakeParticipantData(uint32_t num_nodes, Span<const uint64_t> offsets,
                                            Span<const uint32_t> neighbours, Span<const uint64_t> feature_offsets,
                                            Span<const uint32_t> features, std::vector<uint32_t> columns,
                                            uint32_t index, uint32_t participants) {
  if (offsets.size() != size_t{num_nodes} + 1 || feature_offsets.size() != size_t{num_nodes} + 1 ||
      offsets[num_nodes] != neighbours.size() || feature_offsets[num_nodes] != features.size() ||
      index >= participants || columns.empty()) {
    return Status::InvalidArgument();
  }
  ParticipantData d;
  d.index = index;
  d.participants = participants;
  d.num_nodes = num_nodes;
  d.offsets.assign(offsets.begin(), offsets.end());
  d.neighbours.assign(neighbours.begin(), neighbours.end());
  // The slice: column j of the slice is dataset column columns[j].
  uint32_t width = 0;
  for (uint32_t c : columns) width = std::max(width, c + 1);
  for (uint64_t e = 0; e < features.size(); ++e) width = std::max(width, features[e] + 1);
  std::vector<int32_t> local(width, -1);
  for (size_t j = 0; j < columns.size(); ++j) local[columns[j]] = static_cast<int32_t>(j);
  d.slice = Matrix::Zero(num_nodes, static_cast<Eigen::Index>(columns.size()));
  for (uint32_t v = 0; v < num_nodes; ++v) {
    if (feature_offsets[v] > feature_offsets[v + 1]) return Status::InvalidArgument();
    for (uint64_t e = feature_offsets[v]; e < feature_offsets[v + 1]; ++e) {
      if (local[features[e]] >= 0) d.slice(v, local[features[e]]) = 1.0f;
    }
  }
  d.columns = std::move(columns);
  return d;
}

}  // namespace nodefl::kcagc
