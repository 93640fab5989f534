// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/graph_filter.h"

#include <cmath>
#include <vector>

#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

// D^-1/2 with Â's degrees (neighbours, plus one for the self loop).
std::vector<double> InvSqrtDegrees(const GraphView& g, bool self_loops) {
  std::vector<double> inv(g.num_nodes, 0.0);
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    const double d = static_cast<double>(g.offsets[v + 1] - g.offsets[v]) + (self_loops ? 1.0 : 0.0);
    inv[v] = d > 0 ? 1.0 / std::sqrt(d) : 0.0;
  }
  return inv;
}

// out = L_s x for one vector, in double (the norm's power iteration).
void LaplacianTimes(const GraphView& g, const std::vector<double>& inv, bool self_loops, const std::vector<double>& x,
                    std::vector<double>* out) {
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    double s = self_loops ? inv[v] * x[v] : 0.0;
    for (uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) s += inv[g.neighbours[e]] * x[g.neighbours[e]];
    (*out)[v] = x[v] - inv[v] * s;
  }
}

}  // namespace

Status ValidateGraph(const GraphView& g) {
  if (g.offsets.size() != static_cast<size_t>(g.num_nodes) + 1 || g.offsets[0] != 0 ||
      g.offsets[g.num_nodes] != g.neighbours.size()) {
    return Status::InvalidArgument();
  }
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    if (g.offsets[v + 1] < g.offsets[v]) return Status::InvalidArgument();
    for (uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      if (g.neighbours[e] >= g.num_nodes || g.neighbours[e] == v) return Status::InvalidArgument();
    }
  }
  return Status::Ok();
}

Result<double> LaplacianNorm(const GraphView& g, bool self_loops) {
  NODEFL_TRY(ValidateGraph(g));
  if (g.num_nodes == 0) return Status::InvalidArgument();
  const std::vector<double> inv = InvSqrtDegrees(g, self_loops);
  // A pseudo-random start has a component along the top eigenvector with
  // probability one; a fixed seed makes every participant agree.
  SplitMix64 rng(0x6b43414743ull);
  std::vector<double> x(g.num_nodes), y(g.num_nodes);
  for (double& v : x) v = rng.Uniform() - 0.5;
  double lambda = 0.0;
  constexpr int kMaxSteps = 20000;
  for (int step = 0; step < kMaxSteps; ++step) {
    double norm = 0.0;
    for (double v : x) norm += v * v;
    norm = std::sqrt(norm);
    if (norm == 0.0) return 0.0;
    for (double& v : x) v /= norm;
    LaplacianTimes(g, inv, self_loops, x, &y);
    double rayleigh = 0.0;
    for (uint32_t v = 0; v < g.num_nodes; ++v) rayleigh += x[v] * y[v];
    // The Rayleigh quotient rises monotonically to λ_max; its error is the
    // square of the vector's, so a relative change of 1e-12 is plenty.
    const bool settled = step > 0 && std::abs(rayleigh - lambda) <= 1e-12 * std::abs(rayleigh);
    lambda = rayleigh;
    if (settled) break;
    x.swap(y);
  }
  return lambda;
}

Status ApplyGraphFilter(const GraphView& g, const FilterOptions& o, Matrix* x) {
  NODEFL_TRY(ValidateGraph(g));
  if (x == nullptr || x->rows() != static_cast<Eigen::Index>(g.num_nodes)) return Status::InvalidArgument();
  if (o.order == 0 || x->cols() == 0) return Status::Ok();
  double norm = o.laplacian_norm;
  if (o.kind == FilterKind::kNorm && norm <= 0.0) {
    NODEFL_TRY_ASSIGN(norm, LaplacianNorm(g, o.self_loops));
  }
  if (o.kind == FilterKind::kNorm && !(norm > 0.0 && std::isfinite(norm))) return Status::InvalidArgument();
  // One step is x <- a x + b Â_n x with Â_n = D^-1/2 Â D^-1/2 = I - L_s:
  //   kHalf: I - L_s/2 = (I + Â_n)/2           a = b = 1/2
  //   kNorm: I - L_s/ν = (1 - 1/ν) I + Â_n/ν   a = 1 - 1/ν, b = 1/ν
  const float a = o.kind == FilterKind::kHalf ? 0.5f : static_cast<float>(1.0 - 1.0 / norm);
  const float b = o.kind == FilterKind::kHalf ? 0.5f : static_cast<float>(1.0 / norm);
  const std::vector<double> inv_d = InvSqrtDegrees(g, o.self_loops);
  std::vector<float> inv(inv_d.begin(), inv_d.end());
  Matrix next(x->rows(), x->cols());
  Eigen::Matrix<float, 1, Eigen::Dynamic> acc(x->cols());
  for (uint32_t step = 0; step < o.order; ++step) {
    for (uint32_t v = 0; v < g.num_nodes; ++v) {
      if (o.self_loops) {
        acc = inv[v] * x->row(v);
      } else {
        acc.setZero();
      }
      for (uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
        const uint32_t u = g.neighbours[e];
        acc += inv[u] * x->row(u);
      }
      next.row(v) = a * x->row(v) + (b * inv[v]) * acc;
    }
    x->swap(next);
  }
  return Status::Ok();
}

}  // namespace nodefl::kcagc
