// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-trees plan's options and registration (job_catalog.h): Lumos's
// heterogeneity-aware tree constructor, greedy initialisation by secure
// comparisons (the secure-compare job, its compare_* options apply) and
// then trimming, either exactly to the optimal workload (lumos_trim_job.h)
// or by the paper's MCMC over secure comparisons (lumos_mcmc_job.h), and
// optionally training the tree GNN on the trees (lumos_train_job.h).
#pragma once

#include <cstdint>
#include <string>

#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_options.h"

namespace nodefl::server::jobs {

struct LumosJobConfig {
  // strict: the greedy comparison results stay on the devices and no device
  // reports its kept neighbours (the server learns workloads and the
  // drains' root bits only, docs/privacy.md); paper: both are reported, and
  // the server checks every edge's coverage itself.
  std::string privacy = "strict";
  // exact: drains to public thresholds (docs/lumos.md). mcmc: the paper's
  // Lumos Alg. 2 and 3 with every workload comparison a secure two-party
  // comparison (lumos_mcmc_job.h); paper privacy only, because the server
  // learns every comparison result (Alg. 3 needs them public).
  std::string method = "exact";
  uint32_t step_deadline_ms = 120000;  // one drain step; mcmc: one comparison step, move or revert
  uint32_t mcmc_iterations = 300;      // Lumos Alg. 2's T (the paper's LastFM setting)
  uint64_t mcmc_seed = 0;              // the server's picks and Eq. 18 draws; 0: random
  // Federated training of the tree GNN after trimming (Lumos Sec. VI,
  // lumos_train_job.h). off: trees only; node: node classification; link:
  // link prediction (Sec. VI-C).
  std::string train = "off";
  std::string model = "gcn";  // gcn or gat
  uint32_t epochs = 300;      // Lumos Sec. VIII-A
  double epsilon = 2;         // the feature budget (Lumos Sec. VIII-A)
  double label_epsilon = 2;   // strict privacy: the label's randomised-response budget
  std::string tree = "tree";  // tree (Lumos) or ego (Lumos w.o. VN: the ego network)
  uint32_t epoch_deadline_ms = 120000;
  uint64_t train_seed = 0;  // parameters' initialisation; 0: random
  uint64_t split_seed = 1;  // the 50/25/25 node split over the participants (link: the partner draw)
  // The server never sees the dataset: the feature dimension and the
  // number of classes are given (both required with train=node; the
  // features with train=link).
  uint32_t features = 0;
  uint32_t classes = 0;
  // Link prediction: partners per device at most (training negatives and
  // the AUC's negatives, 1 .. 32) and the seed of the 80/5/15 edge split.
  uint32_t negatives = 4;
  uint32_t eval_negatives = 2;
  uint64_t edge_seed = 1;
  // The public random projection of the features (0: none) and its seed.
  uint32_t projection = 0;
  uint64_t projection_seed = 1;
  // Training epochs sum the devices' gradients and metrics through secure
  // aggregation (lumos_train_job.h): the server learns the sums only. The
  // per-value clip of a device's gradient contribution, and the sparse
  // mask graph as the secure-aggregate job takes it (peers 0: 2 ceil(log2 n);
  // threshold 0: a strict majority of the peers).
  bool secure_sum = false;
  double secure_clip = 1024;  // LumosTrainOptions::secure_clip says why
  uint32_t secure_peers = 0;
  uint32_t secure_threshold = 0;
};

template <>
std::unique_ptr<TableOptionGroup<LumosJobConfig>> MakeOptionGroup<LumosJobConfig>();

const JobKind& LumosTreesKind();

}  // namespace nodefl::server::jobs
