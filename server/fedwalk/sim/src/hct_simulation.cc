// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/sim/hct_simulation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/common/bin_plan.h"
#include "nodefl/fedwalk/degree_features.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/random/drbg.h"

namespace nodefl::server::fedwalk {

namespace fw = nodefl::fedwalk;

SimulatedJob SimulateHctUploads(const std::vector<std::vector<uint32_t>>& neighbours, fw::HctParameters params,
                                uint64_t seed) {
  SimulatedJob job;
  const auto n = static_cast<uint32_t>(neighbours.size());
  params.vertex_count = n;
  if (params.bins == 0) params.bins = DefaultBins(n);
  if (!fw::CheckHctParameters(params).ok()) {
    job.error = "invalid parameters";
    return job;
  }
  const uint32_t k = params.bins, buckets = params.buckets;
  HctTranscript& t = job.transcript;
  t.mode = params.mode;
  t.vertex_count = n;
  t.bins = k;
  t.buckets = buckets;

  // The job's bin plan, over every vertex.
  std::vector<uint32_t> everyone(n);
  std::iota(everyone.begin(), everyone.end(), 0u);
  t.bin_plan = MakeBinPlan(everyone, n, k, seed);

  // Round 1 on every device.
  job.device_epsilon.assign(n, 0.0);
  t.dictionary.assign(size_t{n} * k, 0.0f);
  std::vector<uint8_t> bins;
  std::vector<uint32_t> counts(k);
  std::vector<double> noised(k);
  std::vector<Drbg> rngs(n);
  for (uint32_t v = 0; v < n; ++v) {
    if (!rngs[v].SeedDeterministic(seed, v).ok()) {
      job.error = "DRBG seeding failed";
      return job;
    }
    bins.clear();
    for (uint32_t u : neighbours[v]) bins.push_back(t.bin_plan[u]);
    double spent = 0;
    if (!fw::CountNeighboursPerBin(Span<const uint8_t>(bins.data(), bins.size()), k, Span<uint32_t>(counts)).ok() ||
        !NoiseCounts(rngs[v], params.mode, params.epsilon_bins, Span<const uint32_t>(counts), Span<double>(noised),
                     &spent)
             .ok()) {
      job.error = "round 1 failed on vertex " + std::to_string(v);
      return job;
    }
    job.device_epsilon[v] += spent;
    for (uint32_t i = 0; i < k; ++i) t.dictionary[size_t{v} * k + i] = static_cast<float>(noised[i]);
  }

  // Round 2 on every device, reading the dictionary as the wire carries it.
  std::vector<uint8_t> dictionary_bytes(t.dictionary.size() * 4);
  for (size_t i = 0; i < t.dictionary.size(); ++i) StoreF32Le(t.dictionary[i], dictionary_bytes.data() + 4 * i);
  const size_t row_bytes = size_t{k} * 4;
  auto row_of = [&](uint32_t u) { return ConstByteSpan(dictionary_bytes.data() + u * row_bytes, row_bytes); };
  std::vector<fw::DegreeKey> keys;
  std::vector<uint8_t> rows;
  for (uint32_t v = 0; v < n; ++v) {
    if (params.mode == PrivacyMode::kPaper) {
      keys.clear();
      for (uint32_t u : neighbours[v]) keys.push_back({fw::EstimatedDegree(row_of(u)), u});
      fw::SortByEstimatedDegree(Span<fw::DegreeKey>(keys.data(), keys.size()));
      std::vector<float>& m = t.ordered_matrices[v];
      m.reserve(keys.size() * k);
      for (const fw::DegreeKey& key : keys) {
        const float* row = &t.dictionary[size_t{key.id} * k];
        m.insert(m.end(), row, row + k);
      }
      // M_v adds no noise: nothing is spent, and nothing is protected.
    } else {
      rows.clear();
      for (uint32_t u : neighbours[v]) {
        const ConstByteSpan r = row_of(u);
        rows.insert(rows.end(), r.begin(), r.end());
      }
      std::vector<int32_t>& h = t.histograms[v];
      h.assign(size_t{k} * buckets, 0);
      double spent = 0;
      if (!fw::BuildDegreeHistogram(ConstByteSpan(rows.data(), rows.size()), k, buckets, Span<int32_t>(h)).ok() ||
          !fw::NoiseHistogram(rngs[v], params.epsilon_upload, k, Span<int32_t>(h), &spent).ok()) {
        job.error = "round 2 failed on vertex " + std::to_string(v);
        return job;
      }
      job.device_epsilon[v] += spent;
    }
    job.leaves.push_back(v);
  }
  return job;
}

}  // namespace nodefl::server::fedwalk
