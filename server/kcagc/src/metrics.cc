// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/metrics.h"

#include <algorithm>
#include <cmath>

#include "nodefl/server/kcagc/hungarian.h"

namespace nodefl::server::kcagc {
namespace {

double Entropy(const std::vector<double>& counts, double total) {
  double h = 0.0;
  for (double c : counts) {
    if (c > 0) h -= (c / total) * std::log(c / total);
  }
  return h;
}

}  // namespace

double NormalizedMutualInformation(std::span<const double> table, uint32_t rows, uint32_t cols) {
  std::vector<double> a(rows, 0.0), b(cols, 0.0);
  double n = 0.0;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) {
      const double x = table[static_cast<size_t>(r) * cols + c];
      a[r] += x;
      b[c] += x;
      n += x;
    }
  }
  if (n <= 0) return 0.0;
  const double ha = Entropy(a, n), hb = Entropy(b, n);
  if (ha == 0.0 && hb == 0.0) return 1.0;  // both one group: identical
  double mi = 0.0;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) {
      const double x = table[static_cast<size_t>(r) * cols + c];
      if (x > 0) mi += (x / n) * std::log(n * x / (a[r] * b[c]));
    }
  }
  return std::max(0.0, mi / ((ha + hb) / 2.0));
}

Result<ClusteringScores> ScoreClustering(std::span<const int32_t> clusters, std::span<const int32_t> labels) {
  if (clusters.size() != labels.size()) return Status::InvalidArgument();
  ClusteringScores s;
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (clusters[i] < 0) return Status::InvalidArgument();
    if (labels[i] < 0) continue;
    ++s.scored;
    s.clusters = std::max(s.clusters, static_cast<uint32_t>(clusters[i]) + 1);
    s.classes = std::max(s.classes, static_cast<uint32_t>(labels[i]) + 1);
  }
  if (s.scored == 0) return Status::InvalidArgument();
  const uint32_t k = s.clusters, c = s.classes;
  std::vector<double> table(static_cast<size_t>(k) * c, 0.0);
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (labels[i] >= 0) table[static_cast<size_t>(clusters[i]) * c + static_cast<size_t>(labels[i])] += 1.0;
  }
  // Maximise the matched counts = minimise their negatives.
  std::vector<double> cost(table.size());
  for (size_t e = 0; e < table.size(); ++e) cost[e] = -table[e];
  const std::vector<int32_t> class_of = MinCostAssignment(cost, k, c);

  std::vector<double> cluster_size(k, 0.0), class_size(c, 0.0);
  for (uint32_t r = 0; r < k; ++r) {
    for (uint32_t j = 0; j < c; ++j) {
      cluster_size[r] += table[static_cast<size_t>(r) * c + j];
      class_size[j] += table[static_cast<size_t>(r) * c + j];
    }
  }
  std::vector<int32_t> cluster_of(c, -1);
  double correct = 0.0;
  for (uint32_t r = 0; r < k; ++r) {
    if (class_of[r] < 0) continue;
    cluster_of[static_cast<size_t>(class_of[r])] = static_cast<int32_t>(r);
    correct += table[static_cast<size_t>(r) * c + static_cast<size_t>(class_of[r])];
  }
  s.accuracy = correct / s.scored;
  s.nmi = NormalizedMutualInformation(table, k, c);
  double f1_sum = 0.0;
  uint32_t present = 0;
  for (uint32_t j = 0; j < c; ++j) {
    if (class_size[j] == 0) continue;
    ++present;
    const int32_t r = cluster_of[j];
    if (r < 0) continue;  // F1 0
    const double tp = table[static_cast<size_t>(r) * c + j];
    if (tp == 0) continue;
    const double precision = tp / cluster_size[static_cast<size_t>(r)], recall = tp / class_size[j];
    f1_sum += 2 * precision * recall / (precision + recall);
  }
  s.macro_f1 = f1_sum / present;
  return s;
}

}  // namespace nodefl::server::kcagc
