// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The two training losses of Lumos Sec. VI-C, each returning the loss and
// its gradient.
//
// Supervised (Eq. 32 and the cross-entropy after it): softmax over the
// classifier's logits z, loss -log p_label, gradient p - onehot(label).
//
// Link prediction (Eq. 33) with the sign defect fixed: the paper writes
// log(-sigma(h_u . h_v')) for the negative samples, the log of a negative
// number; the intended negative-sampling term is log sigma(-h_u . h_v')
// (shared/seeds/README.md). So
//   L = - sum_{v in positives} log sigma(h_u . h_v)
//       - sum_{v' in negatives} log sigma(-h_u . h_v'),
// computed with a stable log-sigmoid.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/gnn/matrix.h"

namespace nodefl::gnn {

// kInvalidArgument for a label outside the logits or a size mismatch.
template <typename S>
[[nodiscard]] Result<S> SoftmaxCrossEntropy(ConstRowMap<S> logits, uint32_t label, RowMap<S> d_logits);

// The index of the largest logit (ties: the lowest index).
template <typename S>
uint32_t ArgMax(ConstRowMap<S> logits);

// h_u: 1 x d; positives: P x d; negatives: Q x d (either may have 0 rows).
// d_u is overwritten; d_positives and d_negatives (same shapes as their
// inputs) are overwritten with the gradient at each row.
template <typename S>
[[nodiscard]] Result<S> LinkLoss(ConstRowMap<S> h_u, ConstMatrixMap<S> positives, ConstMatrixMap<S> negatives,
                                 RowMap<S> d_u, MatrixMap<S> d_positives, MatrixMap<S> d_negatives);

// log sigma(x), without overflow for any x.
template <typename S>
S LogSigmoid(S x);

}  // namespace nodefl::gnn
