// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/histogram_plan.h"

#include <algorithm>
#include <cmath>

#include "nodefl/protocol/fedwalk/histogram_format.h"

namespace nodefl::server::fedwalk {

uint32_t DefaultClusters(double /*epsilon*/, uint32_t vertices) {
  // One vertex per cluster, as far as the u16 ids reach. Measured on Cora,
  // BlogCatalog and a generated LFR-like graph at epsilon 1, 2, 4 and 8
  // (docs/fedwalk.md): the finest partition gives the best (or, within the
  // run-to-run spread, equal) Micro-F1 at every epsilon where anything is
  // learnt, and at epsilon <= 2 every cluster count is at chance. The
  // epsilon is kept as a parameter so that a rule depending on it can
  // replace this one without changing callers.
  return std::max<uint32_t>(1, std::min<uint32_t>(vertices, nodefl::fedwalk::kMaxClusters));
}

std::optional<std::vector<PlannedRelease>> PlanReleases(const HistogramPlanOptions& o, uint32_t vertices,
                                                        std::string* error) {
  auto fail = [error](std::string message) -> std::optional<std::vector<PlannedRelease>> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  if (!std::isfinite(o.total_epsilon) || o.total_epsilon <= 0) return fail("epsilon must be positive and finite");
  if (vertices == 0) return fail("no vertices");
  if (o.clusters > nodefl::fedwalk::kMaxClusters || o.first_clusters > nodefl::fedwalk::kMaxClusters) {
    return fail("at most 65535 clusters");
  }
  std::vector<PlannedRelease> plan;
  if (o.scheme == PartitionScheme::kRandom) {
    plan.push_back({o.clusters != 0 ? o.clusters : DefaultClusters(o.total_epsilon, vertices), o.total_epsilon});
    return plan;
  }
  if (o.scheme == PartitionScheme::kTreeCut) {
    if (!(o.tree_epsilon > 0 && o.tree_epsilon < o.total_epsilon)) {
      return fail("the tree's epsilon must be positive and below the total");
    }
    const double e = o.total_epsilon - o.tree_epsilon;
    plan.push_back({o.clusters != 0 ? o.clusters : DefaultClusters(e, vertices), e});
    return plan;
  }
  if (!(o.first_share > 0 && o.first_share < 1)) return fail("the first release's share must be in (0, 1)");
  const double e1 = o.total_epsilon * o.first_share;
  const double e2 = o.total_epsilon - e1;
  // The refinement's spectral step works on a dense n x C0 matrix and a
  // C0 x C0 eigenproblem: the default first round stops at 1024 clusters.
  constexpr uint32_t kDefaultMaxFirstClusters = 1024;
  plan.push_back({o.first_clusters != 0 ? o.first_clusters
                                        : std::min(DefaultClusters(e1, vertices), kDefaultMaxFirstClusters),
                  e1});
  plan.push_back({o.clusters != 0 ? o.clusters : DefaultClusters(e2, vertices), e2});
  return plan;
}

std::optional<PartitionScheme> ParsePartitionScheme(const std::string& name) {
  if (name == "random") return PartitionScheme::kRandom;
  if (name == "refined") return PartitionScheme::kRefined;
  if (name == "tree") return PartitionScheme::kTreeCut;
  return std::nullopt;
}

const char* PartitionSchemeName(PartitionScheme scheme) {
  switch (scheme) {
    case PartitionScheme::kRandom: return "random";
    case PartitionScheme::kRefined: return "refined";
    case PartitionScheme::kTreeCut: return "tree";
  }
  return "?";
}

}  // namespace nodefl::server::fedwalk
