// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the server holds after one release round of strict FedWalk's
// cluster-histogram job (sdk/fedwalk/.../histogram_format.h): the public
// partition it published and every device's noised histogram h_v over its
// clusters. Only the positive cells are kept: the walk generator and the
// partition refinement use max(h_v[c], 0) (post-processing of the
// releases), and at the epsilons that matter most noised cells are zero or
// negative, so a row costs O(clusters v really touches + positive noise).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nodefl::server::fedwalk {

struct HistogramCell {
  uint16_t cluster = 0;
  uint32_t count = 0;  // > 0
};

class ClusterHistograms {
 public:
  ClusterHistograms() = default;
  // `partition[v]`: the cluster of vertex v or nodefl::fedwalk::kAbsentCluster
  // (0xFFFF); its size is the vertex count. Clusters are 0 .. clusters-1.
  ClusterHistograms(std::vector<uint16_t> partition, uint32_t clusters);

  // Stores vertex v's upload (one value per cluster). False (nothing
  // stored) for a vertex out of range, absent from the partition, or a row
  // of the wrong size. Cells of clusters without members are dropped:
  // they hold noise only, and no walk could go there.
  bool SetRow(uint32_t vertex, std::span<const int32_t> cells);

  uint32_t vertex_count() const { return static_cast<uint32_t>(partition_.size()); }
  uint32_t clusters() const { return clusters_; }
  const std::vector<uint16_t>& partition() const { return partition_; }
  bool present(uint32_t v) const { return present_[v] != 0; }
  uint32_t present_count() const { return present_count_; }
  std::span<const HistogramCell> row(uint32_t v) const { return rows_[v]; }
  // Members of cluster c (vertices of the partition, present or not).
  std::span<const uint32_t> members(uint32_t c) const;
  // Sum of a row's positive cells: an estimate of the degree, biased up by
  // the positive noise.
  uint64_t RowMass(uint32_t v) const;

 private:
  std::vector<uint16_t> partition_;
  uint32_t clusters_ = 0;
  std::vector<std::vector<HistogramCell>> rows_;
  std::vector<uint8_t> present_;
  uint32_t present_count_ = 0;
  std::vector<uint64_t> member_offsets_;
  std::vector<uint32_t> members_;
};

}  // namespace nodefl::server::fedwalk
