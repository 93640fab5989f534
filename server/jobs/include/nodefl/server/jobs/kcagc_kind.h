// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kcagc job's options and registration (job_catalog.h): kCAGC
// collaborative attributed graph clustering among L participants, every
// sum through secure aggregation (contract: protocol/kcagc/job_format.h;
// the job: kcagc_job.h; docs/kcagc.md). The options mirror
// nodefl-kcagc-sim's flags, so the same settings give the same clustering.
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/kcagc/graph_filter.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct KcagcJobConfig {
  std::string mode = "kcagc";            // basic (Protocol 2) | kcagc (Protocol 3) | tree (Sec. 3.4) | joint (not the paper's)
  uint32_t clusters = 0;                 // k; 0: the classes in `labels`
  std::string local_clusters = "k";      // k̂: a number, or a multiple of k ("2k")
  std::string filter = "half";           // half: (1 - l/2)^psi | norm: (1 - l/||L_s||)^psi
  uint32_t filter_order = nodefl::kcagc::FilterOptions{}.order;  // psi, sdk/kcagc's default
  bool self_loops = true;
  std::string space = "whitened";        // whitened | projected | full
  uint32_t space_dims = 0;               // of whitened and projected (0: k)
  std::string seeding = "joint";         // joint | local (Protocol 2 line 6)
  std::string virtual_nodes = "intersection";  // intersection | centre (Protocol 3 line 13)
  uint32_t iterations = 10;              // Q
  uint32_t restarts = 10;                // Protocol 1's, on every participant (local, free)
  uint32_t global_restarts = 1;          // the collaborative k-means', each with its own secure sums
  uint64_t seed = 1;
  std::string secagg_mode = "robust";    // robust | paper (kCAGC Protocol 4)
  uint32_t step_timeout_ms = 300000;
  std::string labels;                    // labels.tsv, evaluation only
};

template <>
std::unique_ptr<TableOptionGroup<KcagcJobConfig>> MakeOptionGroup<KcagcJobConfig>();

const JobKind& KcagcKind();

}  // namespace nodefl::server::jobs
