// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/cluster_partition.h"

#include <algorithm>
#include <random>

#include "nodefl/protocol/fedwalk/histogram_format.h"

namespace nodefl::server::fedwalk {

using nodefl::fedwalk::kAbsentCluster;

std::vector<uint16_t> RandomClusterPartition(const std::vector<uint32_t>& participants, uint32_t vertex_count,
                                             uint32_t clusters, uint64_t seed) {
  std::vector<uint16_t> partition(vertex_count, kAbsentCluster);
  if (clusters == 0) return partition;
  std::vector<uint32_t> order(participants);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const uint64_t m = order.size();
  for (uint64_t i = 0; i < m; ++i) {
    // Position i of the shuffled order falls in range floor(i * C / m).
    partition[order[i]] = static_cast<uint16_t>(i * clusters / m);
  }
  return partition;
}

std::vector<uint8_t> EncodeClusterPartition(const std::vector<uint16_t>& partition) {
  std::vector<uint8_t> out(partition.size() * nodefl::fedwalk::kPartitionEntryBytes);
  for (size_t v = 0; v < partition.size(); ++v) {
    out[2 * v] = static_cast<uint8_t>(partition[v]);
    out[2 * v + 1] = static_cast<uint8_t>(partition[v] >> 8);
  }
  return out;
}

std::vector<uint32_t> ClusterSizes(const std::vector<uint16_t>& partition, uint32_t clusters) {
  std::vector<uint32_t> sizes(clusters, 0);
  for (uint16_t c : partition) {
    if (c != kAbsentCluster && c < clusters) ++sizes[c];
  }
  return sizes;
}

}  // namespace nodefl::server::fedwalk
