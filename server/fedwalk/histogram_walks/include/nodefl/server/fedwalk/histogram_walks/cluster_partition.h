// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Public partitions of the vertices for strict FedWalk's cluster-histogram
// job, and their artefact encoding (sdk/fedwalk/.../histogram_format.h,
// kPartition: vertex_count x u16 LE). A partition only has to be public and
// fixed before the devices release against it; it may be random, or derived
// from earlier releases (spectral_partition.h, tree_cut.h).
#pragma once

#include <cstdint>
#include <vector>

namespace nodefl::server::fedwalk {

// A uniformly random numbering of `participants` cut into `clusters` equal
// ranges: every cluster holds floor or ceil of |participants|/clusters
// vertices (none is empty when clusters <= |participants|). Ids that take no
// part get kAbsentCluster. `clusters` must be 1 .. kMaxClusters.
std::vector<uint16_t> RandomClusterPartition(const std::vector<uint32_t>& participants, uint32_t vertex_count,
                                             uint32_t clusters, uint64_t seed);

// The kPartition artefact.
std::vector<uint8_t> EncodeClusterPartition(const std::vector<uint16_t>& partition);

// Vertices per cluster (absent ones are not counted).
std::vector<uint32_t> ClusterSizes(const std::vector<uint16_t>& partition, uint32_t clusters);

}  // namespace nodefl::server::fedwalk
