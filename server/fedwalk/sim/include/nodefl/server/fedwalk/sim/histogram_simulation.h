// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// In-process stand-in for one release round of strict FedWalk's
// cluster-histogram job: every vertex of a graph makes its release with
// the SDK's own device function (nodefl::fedwalk::MakeClusterHistogram,
// the one FedWalkHistogramRole calls), each with its own deterministic
// DRBG stream, and the result is what the server would hold. Used by
// nodefl-histogram-bench for epsilon sweeps without TLS; the job over TLS
// (tests/server/fedwalk_histogram_integration_test) checks that real
// devices upload exactly this form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/server/fedwalk/histogram_walks/cluster_histograms.h"

namespace nodefl::server::fedwalk {

struct SimulatedRelease {
  ClusterHistograms histograms;
  double epsilon_spent = 0;  // what each device's ledger records (the same for all)
  std::string error;         // empty on success
};

// `neighbours[v]`: sorted neighbour list of vertex v (ids < neighbours.size()).
// Every vertex with a cluster in `partition` releases; `round` separates
// the DRBG streams of the rounds of one run. Runs on `threads` threads; the
// result does not depend on their number.
SimulatedRelease SimulateHistogramRelease(const std::vector<std::vector<uint32_t>>& neighbours,
                                          std::vector<uint16_t> partition, uint32_t clusters, double epsilon,
                                          uint64_t seed, uint32_t round, unsigned threads);

}  // namespace nodefl::server::fedwalk
