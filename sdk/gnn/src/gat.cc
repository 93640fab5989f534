// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/gat.h"

#include <cmath>
#include <limits>

namespace nodefl::gnn {
namespace {

template <typename S>
bool ShapesMatch(const GraphView& g, uint32_t heads, ConstMatrixMap<S> h, const GatParams<S>& p,
                 const GatCache<S>& c) {
  const Eigen::Index n = static_cast<Eigen::Index>(g.nodes);
  const Eigen::Index out = p.w.cols();
  const Eigen::Index entries = static_cast<Eigen::Index>(g.entries_with_self());
  const Eigen::Index k = static_cast<Eigen::Index>(heads);
  if (k == 0 || out % k != 0) return false;
  const Eigen::Index f = out / k;
  return h.rows() == n && p.w.rows() == h.cols() && p.att_src.rows() == k && p.att_src.cols() == f &&
         p.att_dst.rows() == k && p.att_dst.cols() == f && p.b.cols() == out && c.z.rows() == n &&
         c.z.cols() == out && c.alpha.rows() == entries && c.alpha.cols() == k && c.pre.rows() == entries &&
         c.pre.cols() == k && c.scores.rows() == n && c.scores.cols() == 2 * k;
}

// Entry index of node i's self term; its neighbours follow in CSR order.
inline size_t EntryBase(const GraphView& g, uint32_t i) { return size_t{g.row_begin[i]} + i; }

}  // namespace

template <typename S>
Status GatForward(const GraphView& g, uint32_t heads, S slope, ConstMatrixMap<S> h, const GatParams<S>& p,
                  GatCache<S>& c, MatrixMap<S> out) {
  if (!ShapesMatch(g, heads, h, p, c) || out.rows() != static_cast<Eigen::Index>(g.nodes) || out.cols() != p.w.cols()) {
    return Status::InvalidArgument();
  }
  const Eigen::Index f = p.w.cols() / heads;
  MultiplyRows(h, p.w, c.z, false);
  // Source and target scores of every node and head.
  for (uint32_t i = 0; i < g.nodes; ++i) {
    for (uint32_t k = 0; k < heads; ++k) {
      const auto zik = c.z.row(i).segment(k * f, f);
      c.scores(i, 2 * k) = zik.dot(p.att_src.row(k));
      c.scores(i, 2 * k + 1) = zik.dot(p.att_dst.row(k));
    }
  }
  out.setZero();
  for (uint32_t i = 0; i < g.nodes; ++i) {
    const size_t base = EntryBase(g, i);
    const uint32_t count = g.degree(i) + 1;
    for (uint32_t k = 0; k < heads; ++k) {
      // Logits, then a numerically stable softmax over the row.
      S top = -std::numeric_limits<S>::infinity();
      for (uint32_t t = 0; t < count; ++t) {
        const uint32_t j = t == 0 ? i : g.neighbours[g.row_begin[i] + t - 1];
        const S pre = c.scores(i, 2 * k + 1) + c.scores(j, 2 * k);
        c.pre(base + t, k) = pre;
        const S e = pre > 0 ? pre : slope * pre;
        c.alpha(base + t, k) = e;
        if (e > top) top = e;
      }
      S sum = 0;
      for (uint32_t t = 0; t < count; ++t) {
        const S a = std::exp(c.alpha(base + t, k) - top);
        c.alpha(base + t, k) = a;
        sum += a;
      }
      for (uint32_t t = 0; t < count; ++t) {
        c.alpha(base + t, k) /= sum;
        const uint32_t j = t == 0 ? i : g.neighbours[g.row_begin[i] + t - 1];
        out.row(i).segment(k * f, f) += c.alpha(base + t, k) * c.z.row(j).segment(k * f, f);
      }
    }
  }
  out.rowwise() += p.b;
  return Status::Ok();
}

template <typename S>
Status GatBackward(const GraphView& g, uint32_t heads, S slope, ConstMatrixMap<S> h, const GatParams<S>& p,
                   GatCache<S>& c, ConstMatrixMap<S> d_out, MatrixMap<S> dz, GatGrads<S>& d, MatrixMap<S>* d_h) {
  const Eigen::Index n = g.nodes;
  if (!ShapesMatch(g, heads, h, p, c) || d_out.rows() != n || d_out.cols() != p.w.cols() || dz.rows() != n ||
      dz.cols() != p.w.cols() || d.w.rows() != p.w.rows() || d.w.cols() != p.w.cols() ||
      d.att_src.rows() != p.att_src.rows() || d.att_src.cols() != p.att_src.cols() ||
      d.att_dst.rows() != p.att_dst.rows() || d.att_dst.cols() != p.att_dst.cols() || d.b.cols() != p.w.cols() ||
      (d_h != nullptr && (d_h->rows() != n || d_h->cols() != h.cols()))) {
    return Status::InvalidArgument();
  }
  const Eigen::Index f = p.w.cols() / heads;
  d.b += d_out.colwise().sum();
  dz.setZero();
  c.scores.setZero();  // now: d(source score), d(target score)
  for (uint32_t i = 0; i < g.nodes; ++i) {
    const size_t base = EntryBase(g, i);
    const uint32_t count = g.degree(i) + 1;
    for (uint32_t k = 0; k < heads; ++k) {
      const auto gi = d_out.row(i).segment(k * f, f);
      // d alpha_ij = g_i . Z_j; softmax: d e_ij = alpha_ij (d alpha_ij - sum_l alpha_il d alpha_il).
      S weighted = 0;
      for (uint32_t t = 0; t < count; ++t) {
        const uint32_t j = t == 0 ? i : g.neighbours[g.row_begin[i] + t - 1];
        const S a = c.alpha(base + t, k);
        weighted += a * gi.dot(c.z.row(j).segment(k * f, f));
        dz.row(j).segment(k * f, f) += a * gi;
      }
      for (uint32_t t = 0; t < count; ++t) {
        const uint32_t j = t == 0 ? i : g.neighbours[g.row_begin[i] + t - 1];
        const S a = c.alpha(base + t, k);
        const S de = a * (gi.dot(c.z.row(j).segment(k * f, f)) - weighted);
        const S dpre = c.pre(base + t, k) > 0 ? de : slope * de;
        c.scores(j, 2 * k) += dpre;      // source score of j
        c.scores(i, 2 * k + 1) += dpre;  // target score of i
      }
    }
  }
  for (uint32_t j = 0; j < g.nodes; ++j) {
    for (uint32_t k = 0; k < heads; ++k) {
      const S ds = c.scores(j, 2 * k), dt = c.scores(j, 2 * k + 1);
      dz.row(j).segment(k * f, f) += ds * p.att_src.row(k) + dt * p.att_dst.row(k);
      d.att_src.row(k) += ds * c.z.row(j).segment(k * f, f);
      d.att_dst.row(k) += dt * c.z.row(j).segment(k * f, f);
    }
  }
  AddTransposedProduct(h, dz, d.w);
  if (d_h != nullptr) MultiplyTransposedRight(dz, p.w, *d_h);
  return Status::Ok();
}

template Status GatForward<float>(const GraphView&, uint32_t, float, ConstMatrixMap<float>, const GatParams<float>&,
                                  GatCache<float>&, MatrixMap<float>);
template Status GatForward<double>(const GraphView&, uint32_t, double, ConstMatrixMap<double>,
                                   const GatParams<double>&, GatCache<double>&, MatrixMap<double>);
template Status GatBackward<float>(const GraphView&, uint32_t, float, ConstMatrixMap<float>, const GatParams<float>&,
                                   GatCache<float>&, ConstMatrixMap<float>, MatrixMap<float>, GatGrads<float>&,
                                   MatrixMap<float>*);
template Status GatBackward<double>(const GraphView&, uint32_t, double, ConstMatrixMap<double>,
                                    const GatParams<double>&, GatCache<double>&, ConstMatrixMap<double>,
                                    MatrixMap<double>, GatGrads<double>&, MatrixMap<double>*);

}  // namespace nodefl::gnn
