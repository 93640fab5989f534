// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/spectral_partition.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/server/fedwalk/skipgram/fast_rng.h"

namespace nodefl::server::fedwalk {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// k-means on the rows of z (m x d): k-means++ seeding, then Lloyd.
std::vector<uint32_t> KMeans(const Matrix& z, uint32_t k, const RefineOptions& o) {
  const Eigen::Index m = z.rows();
  FastRng rng(StreamSeed(o.seed, 0x6b6d65616e73ull));  // "kmeans"
  Matrix centres(k, z.cols());
  std::vector<double> nearest(static_cast<size_t>(m), std::numeric_limits<double>::infinity());
  centres.row(0) = z.row(rng.Below(static_cast<uint32_t>(m)));
  for (uint32_t c = 1; c < k; ++c) {
    double total = 0;
    for (Eigen::Index i = 0; i < m; ++i) {
      nearest[static_cast<size_t>(i)] =
          std::min(nearest[static_cast<size_t>(i)], (z.row(i) - centres.row(c - 1)).squaredNorm());
      total += nearest[static_cast<size_t>(i)];
    }
    double u = rng.Uniform() * total;
    Eigen::Index pick = m - 1;
    for (Eigen::Index i = 0; i < m; ++i) {
      u -= nearest[static_cast<size_t>(i)];
      if (u < 0) {
        pick = i;
        break;
      }
    }
    centres.row(c) = z.row(pick);
  }
  std::vector<uint32_t> label(static_cast<size_t>(m), 0);
  const unsigned threads = std::max(1u, o.threads);
  for (uint32_t it = 0; it < o.iterations; ++it) {
    std::vector<uint8_t> changed(threads, 0);
    auto assign = [&](unsigned t) {
      for (Eigen::Index i = t; i < m; i += threads) {
        Eigen::Index best = 0;
        (centres.rowwise() - z.row(i)).rowwise().squaredNorm().minCoeff(&best);
        if (label[static_cast<size_t>(i)] != static_cast<uint32_t>(best)) changed[t] = 1;
        label[static_cast<size_t>(i)] = static_cast<uint32_t>(best);
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(assign, t);
    assign(0);
    for (auto& th : pool) th.join();
    if (it > 0 && std::none_of(changed.begin(), changed.end(), [](uint8_t x) { return x != 0; })) break;
    Matrix sums = Matrix::Zero(k, z.cols());
    std::vector<uint32_t> counts(k, 0);
    for (Eigen::Index i = 0; i < m; ++i) {
      sums.row(label[static_cast<size_t>(i)]) += z.row(i);
      ++counts[label[static_cast<size_t>(i)]];
    }
    for (uint32_t c = 0; c < k; ++c) {
      if (counts[c] > 0) {
        centres.row(c) = sums.row(c) / counts[c];
      } else {
        // An empty cluster takes a random point, so that all k stay in use.
        centres.row(c) = z.row(rng.Below(static_cast<uint32_t>(m)));
      }
    }
  }
  return label;
}

}  // namespace

std::vector<uint16_t> RefinePartition(const ClusterHistograms& first, uint32_t clusters, const RefineOptions& o) {
  const uint32_t n = first.vertex_count();
  std::vector<uint16_t> out(n, nodefl::fedwalk::kAbsentCluster);
  std::vector<uint32_t> present;
  for (uint32_t v = 0; v < n; ++v) {
    if (first.present(v)) present.push_back(v);
  }
  if (present.empty() || clusters == 0) return out;
  clusters = std::min<uint32_t>(clusters, static_cast<uint32_t>(present.size()));
  const Eigen::Index m = static_cast<Eigen::Index>(present.size());
  const Eigen::Index c0 = first.clusters();
  // Rows: neighbour distributions over the first partition's clusters.
  Matrix x = Matrix::Zero(m, c0);
  for (Eigen::Index i = 0; i < m; ++i) {
    const double mass = static_cast<double>(first.RowMass(present[static_cast<size_t>(i)]));
    if (mass <= 0) continue;
    for (const HistogramCell& cell : first.row(present[static_cast<size_t>(i)])) {
      x(i, cell.cluster) = cell.count / mass;
    }
  }
  x.rowwise() -= x.colwise().mean();
  const uint32_t dims = static_cast<uint32_t>(std::clamp<Eigen::Index>(o.dims, 1, std::max<Eigen::Index>(1, c0 - 1)));
  const Eigen::MatrixXd gram = x.transpose() * x;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(gram);
  // Eigenvalues ascend: the last `dims` columns are the top directions.
  const Eigen::MatrixXd top = eigen.eigenvectors().rightCols(dims);
  Matrix z = x * top;
  for (Eigen::Index i = 0; i < m; ++i) {
    const double norm = z.row(i).norm();
    if (norm > 0) z.row(i) /= norm;
  }
  const std::vector<uint32_t> label = KMeans(z, clusters, o);
  for (Eigen::Index i = 0; i < m; ++i) {
    out[present[static_cast<size_t>(i)]] = static_cast<uint16_t>(label[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace nodefl::server::fedwalk
