// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/sim/histogram_simulation.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "nodefl/fedwalk/cluster_histogram.h"
#include "nodefl/random/drbg.h"

namespace nodefl::server::fedwalk {

namespace fw = nodefl::fedwalk;

SimulatedRelease SimulateHistogramRelease(const std::vector<std::vector<uint32_t>>& neighbours,
                                          std::vector<uint16_t> partition, uint32_t clusters, double epsilon,
                                          uint64_t seed, uint32_t round, unsigned threads) {
  SimulatedRelease out;
  const auto n = static_cast<uint32_t>(neighbours.size());
  if (partition.size() != n || clusters == 0 || clusters > fw::kMaxClusters) {
    out.error = "partition and graph disagree, or a cluster count out of range";
    return out;
  }
  const std::vector<uint16_t> plan = partition;
  out.histograms = ClusterHistograms(std::move(partition), clusters);
  threads = std::max(1u, threads);
  std::vector<std::vector<int32_t>> rows(n);
  std::atomic<bool> failed{false};
  std::vector<double> spent(threads, 0.0);
  auto work = [&](unsigned t) {
    std::vector<fw::HistogramNeighbour> nb;
    Drbg rng;
    for (uint32_t v = t; v < n; v += threads) {
      if (plan[v] == fw::kAbsentCluster) continue;
      // One stream per (round, vertex): the device's own generator.
      if (!rng.SeedDeterministic(seed ^ (uint64_t{round} << 56), v).ok()) {
        failed = true;
        return;
      }
      nb.clear();
      for (uint32_t u : neighbours[v]) nb.push_back(fw::HistogramNeighbour{u, plan[u]});
      rows[v].resize(clusters);
      double e = 0;
      if (!fw::MakeClusterHistogram(rng, epsilon, Span<const fw::HistogramNeighbour>(nb.data(), nb.size()),
                                    Span<int32_t>(rows[v].data(), rows[v].size()), &e)
               .ok()) {
        failed = true;
        return;
      }
      spent[t] = e;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  if (failed) {
    out.error = "a device's release failed (epsilon out of range?)";
    return out;
  }
  for (uint32_t v = 0; v < n; ++v) {
    if (!rows[v].empty()) {
      out.histograms.SetRow(v, rows[v]);
      rows[v] = {};
    }
  }
  out.epsilon_spent = *std::max_element(spent.begin(), spent.end());
  return out;
}

}  // namespace nodefl::server::fedwalk
