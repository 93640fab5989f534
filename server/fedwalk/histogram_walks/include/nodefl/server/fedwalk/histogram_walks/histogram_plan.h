// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The releases strict FedWalk asks of every device, from the total epsilon
// per device: how many rounds, how many clusters each, and each round's
// share of the budget. One function for the job and the benchmark, so both
// run the same plan. docs/fedwalk.md has the measurements behind the
// defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/server/fedwalk/histogram_walks/cluster_partition.h"
#include "nodefl/server/fedwalk/histogram_walks/spectral_partition.h"

namespace nodefl::server::fedwalk {

enum class PartitionScheme : uint8_t {
  kRandom,   // one release against a random balanced partition
  kRefined,  // LDPGen: random first release, spectral clusters, second release
  kTreeCut,  // the strict HCT job's tree cut into clusters, then one release
};

struct HistogramPlanOptions {
  double total_epsilon = 8.0;  // per device, over all its releases
  PartitionScheme scheme = PartitionScheme::kRandom;
  uint32_t clusters = 0;        // of the last release; 0: DefaultClusters
  uint32_t first_clusters = 0;  // kRefined: of the random first release; 0: DefaultClusters, at most 1024
  double first_share = 0.5;     // kRefined: share of total_epsilon spent on the first release
  double tree_epsilon = 2.0;    // kTreeCut: what the HCT job's two releases cost (part of the total)
};

struct PlannedRelease {
  uint32_t clusters = 0;
  double epsilon = 0;
};

// The default number of clusters for one release of `epsilon` over
// `vertices` vertices: min(vertices, kMaxClusters), one vertex per cluster
// (measured best; docs/fedwalk.md). At least 1.
uint32_t DefaultClusters(double epsilon, uint32_t vertices);

// The histogram releases in order (1 for kRandom and kTreeCut, 2 for
// kRefined); their epsilons sum to total_epsilon (minus tree_epsilon for
// kTreeCut). std::nullopt and *error for a non-positive or non-finite
// epsilon, a share outside (0, 1), a tree epsilon not below the total, no
// vertices, or a cluster count above kMaxClusters.
std::optional<std::vector<PlannedRelease>> PlanReleases(const HistogramPlanOptions& options, uint32_t vertices,
                                                        std::string* error = nullptr);

// "random" / "refined" / "tree".
std::optional<PartitionScheme> ParsePartitionScheme(const std::string& name);
const char* PartitionSchemeName(PartitionScheme scheme);

}  // namespace nodefl::server::fedwalk
