// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/job_catalog.h"

#include <algorithm>

#include "nodefl/server/jobs/fedwalk_kind.h"
#if NODEFL_WITH_KCAGC
#include "nodefl/server/jobs/kcagc_kind.h"
#endif
#include "nodefl/server/jobs/lumos_kind.h"
#include "nodefl/server/jobs/neighbour_echo_kind.h"
#include "nodefl/server/jobs/secure_aggregate_kind.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

namespace nodefl::server::jobs {

// The one place that lists the jobs: a new algorithm adds its kind(s) and
// its option group here.
const std::vector<const JobKind*>& JobKinds() {
  static const std::vector<const JobKind*> kinds = {&NeighbourEchoKind(),      &FedWalkKind(),
                                                    &FedWalkHctKind(),         &FedWalkHistogramsKind(),
                                                    &SecureCompareKind(),      &LumosTreesKind(),
                                                    &SecureAggregateKind(),
#if NODEFL_WITH_KCAGC
                                                    &KcagcKind(),
#endif
  };
  return kinds;
}

void InstallJobOptions(ServerConfig& config) {
  (void)Options<NeighbourEchoJobConfig>(config);
  (void)Options<FedWalkJobConfig>(config);
  (void)Options<SecureCompareJobConfig>(config);
  (void)Options<LumosJobConfig>(config);
  (void)Options<SecureAggregateJobConfig>(config);
#if NODEFL_WITH_KCAGC
  (void)Options<KcagcJobConfig>(config);
#endif
}

const JobKind* FindJobKind(std::string_view name) {
  for (const JobKind* kind : JobKinds()) {
    if (kind->name == name) return kind;
  }
  return nullptr;
}

ServerConfig DefaultServerConfigWithJobs() {
  ServerConfig config = DefaultServerConfig();
  InstallJobOptions(config);
  return config;
}

std::string JobsHelpText(const ServerConfig& defaults) {
  std::string text = ConfigHelpText(defaults);
  size_t width = 0;
  for (const JobKind* kind : JobKinds()) width = std::max(width, kind->name.size());
  text += "\nJobs (--job):\n";
  for (const JobKind* kind : JobKinds()) {
    text += "  " + std::string(kind->name) + std::string(width + 2 - kind->name.size(), ' ') +
            std::string(kind->help) + "\n";
  }
  return text;
}

}  // namespace nodefl::server::jobs
