// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The joint spectral space in one process (not kCAGC's protocol; the joint
// mode of docs/kcagc.md): the top k left singular vectors U of the
// concatenation X = [X^1 ... X^L] of the participants' filtered slices,
// computed by the block subspace iteration of nodefl/kcagc/spectral.h with
// every product X X^T Q_t a secure sum:
//
//   1. the range round on G_l (nodefl/kcagc/range.h) fixes the code;
//   2. step t: the server sends the public block Q_t (n x b floats; Q_0 is
//      drawn from the seed, so every party can draw it itself), every
//      participant submits Z^l_t = X^l ((X^l)^T Q_t), and the server
//      receives Y_t = Σ_l Z^l_t through one aggregation of n b scalars; it
//      stops on the Rayleigh-Ritz values of Q_t^T Y_t, otherwise
//      orthonormalises Y_t into Q_{t+1};
//   3. U = Q_t W from the last step's Rayleigh-Ritz problem.
//
// What the server learns: every Y_t (n b linear functionals of the Gram
// matrix X X^T per step), and U with σ_1..σ_k; the participants learn every
// Q_t, hence U as well (docs/kcagc.md, "What the server learns").
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/server/kcagc/aggregator.h"
#include "nodefl/server/kcagc/sim/range_round.h"

namespace nodefl::server::kcagc {

struct JointSpaceOptions {
  uint32_t dims = 0;  // k: the columns of U
  // The start block's seed, the step cap and the tolerance: the same
  // options give the centralized run the same iteration
  // (nodefl::kcagc::ToCentralWhitenedSpace).
  nodefl::kcagc::ProjectionOptions projection;
  std::function<void(const std::string&)> progress;  // optional, one line per step
};

struct JointSpace {
  nodefl::kcagc::Matrix basis;          // U, n x k
  std::vector<double> singular_values;  // σ_1 >= ... >= σ_k of X
  uint32_t steps = 0;                   // products X X^T Q_t, each one aggregation
  uint32_t block = 0;                   // b
  bool converged = false;               // false: stopped at max_steps
  RangeRoundResult range;
  AggregationCounters cost;             // the range round and every step
};

// filtered: every participant's filtered slice (n rows each, L >= 1).
// kInvalidArgument for no slices, rows that differ, an empty slice, dims
// = 0 or dims > min(n, m); kOutOfRange from the range rule.
[[nodiscard]] Result<JointSpace> JointSpectralSpace(std::span<const nodefl::kcagc::Matrix> filtered,
                                                    const JointSpaceOptions& options, Aggregator* aggregator);

}  // namespace nodefl::server::kcagc
