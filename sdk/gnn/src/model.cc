// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/gnn/model.h"

#include "nodefl/gnn/dense.h"
#include "nodefl/gnn/gat.h"
#include "nodefl/gnn/gcn.h"

namespace nodefl::gnn {
namespace {

constexpr size_t kMaxParams = size_t{1} << 24;

ParamBlock Take(size_t* cursor, uint32_t rows, uint32_t cols) {
  ParamBlock b{*cursor, rows, cols};
  *cursor += b.size();
  return b;
}

uint32_t OutOf(const ModelShape& s, int layer) { return layer == 0 ? s.hidden : s.out; }
uint32_t InOf(const ModelShape& s, int layer) { return layer == 0 ? s.features : s.hidden; }

}  // namespace

Result<ParamLayout> LayoutOf(const ModelShape& s) {
  if (s.features == 0 || s.hidden == 0 || s.out == 0 || !(s.dropout >= 0 && s.dropout < 1)) {
    return Status::InvalidArgument();
  }
  const bool gat = s.layer == LayerKind::kGat;
  if (s.layer != LayerKind::kGcn && !gat) return Status::InvalidArgument();
  if (gat && (s.heads == 0 || s.hidden % s.heads != 0 || s.out % s.heads != 0)) return Status::InvalidArgument();
  // Each dimension below 2^24 keeps every product below in size_t and the
  // total check meaningful.
  if (s.features >= kMaxParams || s.hidden >= kMaxParams || s.out >= kMaxParams || s.classes >= kMaxParams) {
    return Status::InvalidArgument();
  }
  ParamLayout l;
  size_t cursor = 0;
  for (int layer = 0; layer < 2; ++layer) {
    const uint32_t in = InOf(s, layer), out = OutOf(s, layer);
    l.w[layer] = Take(&cursor, in, out);
    if (gat) {
      l.att_src[layer] = Take(&cursor, s.heads, out / s.heads);
      l.att_dst[layer] = Take(&cursor, s.heads, out / s.heads);
    } else {
      l.att_src[layer] = l.att_dst[layer] = ParamBlock{cursor, 0, 0};
    }
    l.b[layer] = Take(&cursor, 1, out);
  }
  if (s.classes > 0) {
    l.classifier_w = Take(&cursor, s.out, s.classes);
    l.classifier_b = Take(&cursor, 1, s.classes);
  } else {
    l.classifier_w = l.classifier_b = ParamBlock{cursor, 0, 0};
  }
  if (cursor > kMaxParams) return Status::InvalidArgument();
  l.total = cursor;
  return l;
}

size_t WorkspaceScalars(const ModelShape& s, uint32_t nodes, uint32_t csr_entries) {
  const size_t n = nodes;
  const size_t entries = n + csr_entries;
  const bool gat = s.layer == LayerKind::kGat;
  size_t total = 0;
  for (int layer = 0; layer < 2; ++layer) {
    total += 2 * n * OutOf(s, layer);             // z, y
    if (gat) total += 2 * entries * s.heads;      // alpha, pre
  }
  total += n * s.hidden;                          // dropout mask
  if (gat) total += n * 2 * size_t{s.heads};      // scores
  total += n * (s.hidden > s.out ? s.hidden : s.out);  // dz
  total += n * s.hidden;                          // dy1
  return total;
}

template <typename S>
Status GnnModel<S>::Bind(const ModelShape& shape, const GraphView& graph, Span<S> workspace) {
  Result<ParamLayout> layout = LayoutOf(shape);
  if (!layout.ok()) return layout.status();
  if (workspace.size() < WorkspaceScalars(shape, graph.nodes, static_cast<uint32_t>(graph.neighbours.size()))) {
    return Status::ResourceExhausted();
  }
  shape_ = shape;
  layout_ = *layout;
  graph_ = graph;
  workspace_ = workspace;
  const size_t n = graph.nodes;
  const size_t entries = graph.entries_with_self();
  const bool gat = shape.layer == LayerKind::kGat;
  size_t cursor = 0;
  for (int layer = 0; layer < 2; ++layer) {
    const size_t out = OutOf(shape, layer);
    z_[layer] = cursor;
    cursor += n * out;
    y_[layer] = cursor;
    cursor += n * out;
    alpha_[layer] = cursor;
    if (gat) cursor += entries * shape.heads;
    pre_[layer] = cursor;
    if (gat) cursor += entries * shape.heads;
  }
  mask_ = cursor;
  cursor += n * shape.hidden;
  scores_ = cursor;
  if (gat) cursor += n * 2 * size_t{shape.heads};
  dz_ = cursor;
  cursor += n * (shape.hidden > shape.out ? shape.hidden : shape.out);
  dy1_ = cursor;
  bound_ = true;
  forward_done_ = false;
  return Status::Ok();
}

template <typename S>
ConstMatrixMap<S> GnnModel<S>::output() const {
  return ConstMatrixMap<S>(workspace_.data() + y_[1], graph_.nodes, shape_.out);
}

template <typename S>
Status GnnModel<S>::Forward(Span<const S> params, ConstMatrixMap<S> h0, bool train, crypto::RandomFunction random,
                            void* random_context) {
  if (!bound_) return Status::FailedPrecondition();
  if (params.size() < layout_.total || h0.rows() != static_cast<Eigen::Index>(graph_.nodes) ||
      h0.cols() != static_cast<Eigen::Index>(shape_.features)) {
    return Status::InvalidArgument();
  }
  forward_done_ = false;
  const size_t n = graph_.nodes;
  const bool gat = shape_.layer == LayerKind::kGat;
  const S slope = static_cast<S>(shape_.leaky_slope);
  for (int layer = 0; layer < 2; ++layer) {
    const uint32_t out = OutOf(shape_, layer);
    const ConstMatrixMap<S> in =
        layer == 0 ? h0 : ConstMatrixMap<S>(workspace_.data() + y_[0], static_cast<Eigen::Index>(n), shape_.hidden);
    MatrixMap<S> z = Slice(z_[layer], n, out);
    MatrixMap<S> y = Slice(y_[layer], n, out);
    Status s;
    if (gat) {
      GatParams<S> p{ParamView(params, layout_.w[layer]), ParamView(params, layout_.att_src[layer]),
                     ParamView(params, layout_.att_dst[layer]),
                     ConstRowMap<S>(params.data() + layout_.b[layer].offset, out)};
      GatCache<S> c{z, Slice(alpha_[layer], graph_.entries_with_self(), shape_.heads),
                    Slice(pre_[layer], graph_.entries_with_self(), shape_.heads), Slice(scores_, n, 2 * shape_.heads)};
      s = GatForward<S>(graph_, shape_.heads, slope, in, p, c, y);
    } else {
      s = GcnForward<S>(graph_, in, ParamView(params, layout_.w[layer]),
                        ConstRowMap<S>(params.data() + layout_.b[layer].offset, out), z, y);
    }
    NODEFL_TRY(s);
    if (layer == 0) {
      Relu<S>(y);
      MatrixMap<S> mask = Slice(mask_, n, shape_.hidden);
      NODEFL_TRY(DropoutMask<S>(train ? static_cast<S>(shape_.dropout) : S(0), mask, random, random_context));
      NODEFL_TRY(ApplyMask<S>(ConstMatrixMap<S>(mask.data(), mask.rows(), mask.cols()), y));
    }
  }
  forward_done_ = true;
  return Status::Ok();
}

template <typename S>
Status GnnModel<S>::Backward(Span<const S> params, ConstMatrixMap<S> h0, ConstMatrixMap<S> d_out, Span<S> grads) {
  if (!bound_ || !forward_done_) return Status::FailedPrecondition();
  const size_t n = graph_.nodes;
  if (params.size() < layout_.total || grads.size() < layout_.total || h0.rows() != Eigen::Index(n) ||
      h0.cols() != static_cast<Eigen::Index>(shape_.features) || d_out.rows() != Eigen::Index(n) ||
      d_out.cols() != static_cast<Eigen::Index>(shape_.out)) {
    return Status::InvalidArgument();
  }
  const bool gat = shape_.layer == LayerKind::kGat;
  const S slope = static_cast<S>(shape_.leaky_slope);
  MatrixMap<S> dy1 = Slice(dy1_, n, shape_.hidden);
  for (int layer = 1; layer >= 0; --layer) {
    const uint32_t out = OutOf(shape_, layer);
    const ConstMatrixMap<S> in =
        layer == 0 ? h0 : ConstMatrixMap<S>(workspace_.data() + y_[0], static_cast<Eigen::Index>(n), shape_.hidden);
    const ConstMatrixMap<S> d_y =
        layer == 1 ? d_out : ConstMatrixMap<S>(dy1.data(), dy1.rows(), dy1.cols());
    MatrixMap<S> dz = Slice(dz_, n, out);
    MatrixMap<S>* d_in = layer == 1 ? &dy1 : nullptr;
    RowMap<S> d_b(grads.data() + layout_.b[layer].offset, out);
    Status s;
    if (gat) {
      GatParams<S> p{ParamView(params, layout_.w[layer]), ParamView(params, layout_.att_src[layer]),
                     ParamView(params, layout_.att_dst[layer]),
                     ConstRowMap<S>(params.data() + layout_.b[layer].offset, out)};
      GatCache<S> c{Slice(z_[layer], n, out), Slice(alpha_[layer], graph_.entries_with_self(), shape_.heads),
                    Slice(pre_[layer], graph_.entries_with_self(), shape_.heads), Slice(scores_, n, 2 * shape_.heads)};
      GatGrads<S> d{ParamView(grads, layout_.w[layer]), ParamView(grads, layout_.att_src[layer]),
                    ParamView(grads, layout_.att_dst[layer]), d_b};
      s = GatBackward<S>(graph_, shape_.heads, slope, in, p, c, d_y, dz, d, d_in);
    } else {
      s = GcnBackward<S>(graph_, in, ParamView(params, layout_.w[layer]), d_y, dz, ParamView(grads, layout_.w[layer]),
                         d_b, d_in);
    }
    NODEFL_TRY(s);
    if (layer == 1) {
      // Through dropout (the same mask) and ReLU (its output after dropout
      // is positive exactly where both passed the value on).
      const ConstMatrixMap<S> mask(workspace_.data() + mask_, static_cast<Eigen::Index>(n), shape_.hidden);
      NODEFL_TRY(ApplyMask<S>(mask, dy1));
      NODEFL_TRY(ReluBackward<S>(ConstMatrixMap<S>(workspace_.data() + y_[0], static_cast<Eigen::Index>(n),
                                                   shape_.hidden),
                                 dy1));
    }
  }
  return Status::Ok();
}

template class GnnModel<float>;
template class GnnModel<double>;

}  // namespace nodefl::gnn
