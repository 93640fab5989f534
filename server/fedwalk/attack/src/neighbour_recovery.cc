// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/attack/neighbour_recovery.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>

#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk {
namespace {

bool InDictionary(const HctTranscript& t, uint32_t v) {
  return std::isfinite(t.dictionary[size_t{v} * t.bins]);
}

std::string RowKey(const float* row, uint32_t k) {
  return std::string(reinterpret_cast<const char*>(row), size_t{k} * sizeof(float));
}

}  // namespace

NeighbourGuesses RecoverFromOrderedMatrices(const HctTranscript& t) {
  const uint32_t k = t.bins;
  std::unordered_map<std::string, std::vector<uint32_t>> by_row;
  for (uint32_t v = 0; v < t.vertex_count; ++v) {
    if (InDictionary(t, v)) by_row[RowKey(&t.dictionary[size_t{v} * k], k)].push_back(v);
  }
  NeighbourGuesses guesses;
  for (const auto& [device, m] : t.ordered_matrices) {
    std::vector<uint32_t>& g = guesses[device];
    for (size_t r = 0; r + k <= m.size(); r += k) {
      auto it = by_row.find(RowKey(&m[r], k));
      if (it == by_row.end()) continue;
      for (uint32_t u : it->second) {
        if (u != device) g.push_back(u);
      }
    }
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
  }
  return guesses;
}

NeighbourGuesses RecoverFromHistograms(const HctTranscript& t) {
  const uint32_t k = t.bins, buckets = t.buckets;
  std::vector<uint32_t> candidates;
  for (uint32_t v = 0; v < t.vertex_count; ++v) {
    if (InDictionary(t, v)) candidates.push_back(v);
  }
  // Bucket signature of every candidate, and how crowded each bucket is.
  std::vector<uint8_t> signature(size_t{t.vertex_count} * k, 0);
  std::vector<double> crowd(size_t{k} * buckets, 0.0);
  for (uint32_t u : candidates) {
    for (uint32_t i = 0; i < k; ++i) {
      const uint32_t b = nodefl::fedwalk::HistogramBucket(t.dictionary[size_t{u} * k + i], buckets);
      signature[size_t{u} * k + i] = static_cast<uint8_t>(b);
      crowd[size_t{i} * buckets + b] += 1;
    }
  }
  NeighbourGuesses guesses;
  std::vector<std::pair<double, uint32_t>> scored;
  for (const auto& [device, h] : t.histograms) {
    double total = 0;
    for (int32_t c : h) total += c;
    const auto degree_guess = static_cast<size_t>(std::max(0.0, std::round(total / k)));
    scored.clear();
    for (uint32_t u : candidates) {
      if (u == device) continue;
      double score = 0;
      for (uint32_t i = 0; i < k; ++i) {
        const size_t cell = size_t{i} * buckets + signature[size_t{u} * k + i];
        score += std::log((std::max(h[cell], 0) + 0.5) / (crowd[cell] + 0.5));
      }
      scored.emplace_back(-score, u);  // ascending = best first
    }
    const size_t take = std::min(degree_guess, scored.size());
    std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(take), scored.end());
    std::vector<uint32_t>& g = guesses[device];
    for (size_t j = 0; j < take; ++j) g.push_back(scored[j].second);
    std::sort(g.begin(), g.end());
  }
  return guesses;
}

NeighbourGuesses RecoverByDegreePrior(const HctTranscript& t) {
  const uint32_t k = t.bins;
  std::vector<std::pair<double, uint32_t>> by_degree;  // (-estimated degree, vertex): best first
  for (uint32_t v = 0; v < t.vertex_count; ++v) {
    if (!InDictionary(t, v)) continue;
    double d = 0;
    for (uint32_t i = 0; i < k; ++i) d += t.dictionary[size_t{v} * k + i];
    by_degree.emplace_back(-d, v);
  }
  std::sort(by_degree.begin(), by_degree.end());
  std::map<uint32_t, size_t> sizes;
  for (const auto& [device, m] : t.ordered_matrices) sizes[device] = m.size() / k;
  for (const auto& [device, h] : t.histograms) {
    double total = 0;
    for (int32_t c : h) total += c;
    sizes[device] = static_cast<size_t>(std::max(0.0, std::round(total / k)));
  }
  NeighbourGuesses guesses;
  for (const auto& [device, size] : sizes) {
    std::vector<uint32_t>& g = guesses[device];
    for (const auto& [neg_degree, u] : by_degree) {
      if (g.size() >= size) break;
      if (u != device) g.push_back(u);
    }
    std::sort(g.begin(), g.end());
  }
  return guesses;
}

RecoveryScore ScoreGuesses(const NeighbourGuesses& guesses, const HctTranscript& t,
                           const std::vector<std::vector<uint32_t>>& neighbours) {
  RecoveryScore s;
  uint64_t candidates = 0;
  for (uint32_t v = 0; v < t.vertex_count; ++v) candidates += InDictionary(t, v) ? 1 : 0;
  double chance_correct = 0;
  for (const auto& [device, g] : guesses) {
    if (device >= neighbours.size()) continue;
    std::vector<uint32_t> truth;
    for (uint32_t u : neighbours[device]) {
      if (u < t.vertex_count && InDictionary(t, u)) truth.push_back(u);
    }
    std::vector<uint32_t> hit;
    std::set_intersection(g.begin(), g.end(), truth.begin(), truth.end(), std::back_inserter(hit));
    ++s.devices;
    s.guessed += g.size();
    s.correct += hit.size();
    s.actual += truth.size();
    // A uniformly random guess of |g| of the other candidates hits each
    // true neighbour with probability |g| / (candidates - 1).
    const double pool = candidates > 1 ? static_cast<double>(candidates - 1) : 1.0;
    chance_correct += static_cast<double>(g.size()) * static_cast<double>(truth.size()) / pool;
  }
  s.precision = s.guessed ? static_cast<double>(s.correct) / static_cast<double>(s.guessed) : 0;
  s.recall = s.actual ? static_cast<double>(s.correct) / static_cast<double>(s.actual) : 0;
  s.chance_precision = s.guessed ? chance_correct / static_cast<double>(s.guessed) : 0;
  s.chance_recall = s.actual ? chance_correct / static_cast<double>(s.actual) : 0;
  return s;
}

}  // namespace nodefl::server::fedwalk
