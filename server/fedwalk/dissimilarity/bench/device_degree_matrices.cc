// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "device_degree_matrices.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

namespace nodefl::server::fedwalk::bench {
namespace {

// Inverse-CDF Laplace(0, scale) draw.
double Laplace(std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<double> uniform(-0.5, 0.5);
  const double u = uniform(rng);
  const double magnitude = -scale * std::log(1.0 - 2.0 * std::fabs(u));
  return u < 0 ? -magnitude : magnitude;
}

}  // namespace

DegreeMatrices BuildDeviceDegreeMatrices(const dataset::Graph& graph, uint32_t bins, double epsilon,
                                         uint64_t seed) {
  const uint32_t n = graph.num_nodes;
  std::mt19937_64 rng(seed);

  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint32_t> bin_of(n);
  for (uint32_t t = 0; t < n; ++t) bin_of[order[t]] = t % bins;

  // Degree vectors c_v and their sums (the estimated degrees).
  std::vector<float> vectors(size_t{n} * bins);
  std::vector<double> estimated_degree(n);
  for (uint32_t v = 0; v < n; ++v) {
    std::vector<double> counts(bins, 0.0);
    for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) counts[bin_of[graph.neighbours[e]]] += 1;
    double sum = 0;
    for (uint32_t b = 0; b < bins; ++b) {
      const float noised = static_cast<float>(counts[b] + Laplace(rng, 1.0 / epsilon));
      vectors[size_t{v} * bins + b] = noised;
      sum += noised;
    }
    estimated_degree[v] = sum;
  }

  DegreeMatrices out;
  out.bins = bins;
  out.rows.resize(n);
  out.offsets.resize(size_t{n} + 1, 0);
  out.values.reserve(graph.neighbours.size() * bins);
  std::vector<uint32_t> neighbours;
  for (uint32_t v = 0; v < n; ++v) {
    neighbours.assign(graph.neighbours.begin() + static_cast<std::ptrdiff_t>(graph.offsets[v]),
                      graph.neighbours.begin() + static_cast<std::ptrdiff_t>(graph.offsets[v + 1]));
    std::sort(neighbours.begin(), neighbours.end(), [&](uint32_t a, uint32_t b) {
      return std::pair(estimated_degree[a], a) < std::pair(estimated_degree[b], b);
    });
    for (const uint32_t u : neighbours) {
      out.values.insert(out.values.end(), vectors.begin() + static_cast<std::ptrdiff_t>(size_t{u} * bins),
                        vectors.begin() + static_cast<std::ptrdiff_t>(size_t{u + 1} * bins));
    }
    out.rows[v] = static_cast<uint32_t>(neighbours.size());
    out.offsets[v + 1] = out.values.size();
  }
  return out;
}

}  // namespace nodefl::server::fedwalk::bench
