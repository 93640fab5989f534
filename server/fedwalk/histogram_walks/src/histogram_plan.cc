// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_plan.h"

#include <algorithm>
#include <cmath>

#include "nodefl/fedwalk/histogram_format.h"

namespace nodefl::server::fedwalk {

uint32_t DefaultClusters(double epsilon, uint32_t vertices) {
  const double limit = std::min<double>(vertices, nodefl::fedwalk::kMaxClusters);
  // Placeholder until measured: 8 e^epsilon.
  const double c = 8.0 * std::exp(std::min(epsilon, 30.0));
  return static_cast<uint32_t>(std::clamp(std::round(c), 1.0, std::max(1.0, limit)));
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
  if (!(o.first_share > 0 && o.first_share < 1)) return fail("the first release's share must be in (0, 1)");
  const double e1 = o.total_epsilon * o.first_share;
  const double e2 = o.total_epsilon - e1;
  plan.push_back({o.first_clusters != 0 ? o.first_clusters : DefaultClusters(e1, vertices), e1});
  plan.push_back({o.clusters != 0 ? o.clusters : DefaultClusters(e2, vertices), e2});
  return plan;
}

std::optional<PartitionScheme> ParsePartitionScheme(const std::string& name) {
  if (name == "random") return PartitionScheme::kRandom;
  if (name == "refined") return PartitionScheme::kRefined;
  return std::nullopt;
}

const char* PartitionSchemeName(PartitionScheme scheme) {
  return scheme == PartitionScheme::kRandom ? "random" : "refined";
}

}  // namespace nodefl::server::fedwalk
