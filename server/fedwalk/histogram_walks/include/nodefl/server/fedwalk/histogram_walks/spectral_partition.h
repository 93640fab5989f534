// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A refined public partition from a first round of noised cluster
// histograms (LDPGen's scheme: Qin et al., "Generating Synthetic
// Decentralized Social Graphs with Local Differential Privacy", CCS'17,
// Sec. 4: a first release against a random partition, clustering of the
// noised vectors, a second release against the clusters). Post-processing
// of the first release, so it costs no privacy itself.
//
// Each present vertex's positive cells become a distribution over the first
// partition's clusters (row / row sum), the columns are centred, the rows
// are projected on the top `dims` right singular vectors of that matrix
// (eigenvectors of its Gram matrix, Eigen's self-adjoint solver), scaled to
// unit length, and cut into `clusters` groups by k-means (k-means++ seeding,
// Lloyd iterations). Absent vertices stay absent; present vertices with an
// empty row go to the cluster of the centre nearest to the origin.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/server/fedwalk/histogram_walks/cluster_histograms.h"

namespace nodefl::server::fedwalk {

struct RefineOptions {
  uint32_t dims = 32;        // spectral dimensions (at most the first round's clusters - 1)
  uint32_t iterations = 30;  // Lloyd iterations at most
  uint64_t seed = 1;
  unsigned threads = 2;
};

// The refined partition (size vertex_count, kAbsentCluster for absent ids).
// `clusters` is capped at the number of present vertices.
std::vector<uint16_t> RefinePartition(const ClusterHistograms& first, uint32_t clusters, const RefineOptions& options);

}  // namespace nodefl::server::fedwalk
