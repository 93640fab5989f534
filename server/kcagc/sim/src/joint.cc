// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/sim/joint.h"

#include <algorithm>
#include <cstdio>

#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/spectral.h"

namespace nodefl::server::kcagc {

using nodefl::kcagc::Matrix;

namespace {

// X X^T Q as a secure sum of the participants' X^l ((X^l)^T Q): what
// leaves a participant is its n b contributions, and only their sum
// reaches the server.
class SecureGram final : public nodefl::kcagc::GramOperator {
 public:
  SecureGram(std::span<const Matrix> slices, const nodefl::secagg::FixedPoint& code, Aggregator* aggregator,
             const JointSpaceOptions& options)
      : slices_(slices), code_(code), aggregator_(aggregator), options_(options), inputs_(slices.size()) {}

  Result<Matrix> Apply(const Matrix& block) override {
    for (size_t l = 0; l < slices_.size(); ++l) {
      NODEFL_TRY_ASSIGN(inputs_[l], nodefl::kcagc::JointSpectralContribution(slices_[l], block));
    }
    NODEFL_TRY_ASSIGN(const std::vector<float> sum, aggregator_->Sum(inputs_, code_));
    ++steps_;
    if (options_.progress) {
      char line[128];
      std::snprintf(line, sizeof line, "joint space: step %u, %zu secure sums", steps_, sum.size());
      options_.progress(line);
    }
    return Matrix(Eigen::Map<const Matrix>(sum.data(), block.rows(), block.cols()));
  }

 private:
  std::span<const Matrix> slices_;
  nodefl::secagg::FixedPoint code_;
  Aggregator* aggregator_;
  const JointSpaceOptions& options_;
  std::vector<std::vector<float>> inputs_;
  uint32_t steps_ = 0;
};

}  // namespace

Result<JointSpace> JointSpectralSpace(std::span<const Matrix> slices, const JointSpaceOptions& o,
                                      Aggregator* aggregator) {
  if (slices.empty() || aggregator == nullptr || o.dims == 0) return Status::InvalidArgument();
  const Eigen::Index n = slices.front().rows();
  uint64_t m = 0;
  for (const Matrix& s : slices) {
    if (s.rows() != n || s.cols() == 0 || !s.allFinite()) return Status::InvalidArgument();
    m += static_cast<uint64_t>(s.cols());
  }
  if (n == 0 || o.dims > std::min<uint64_t>(static_cast<uint64_t>(n), m)) return Status::InvalidArgument();
  const AggregationCounters before = aggregator->counters();
  JointSpace out;
  std::vector<double> bounds;
  for (const Matrix& s : slices) bounds.push_back(nodefl::kcagc::GramBound(s));
  NODEFL_TRY_ASSIGN(out.range, RunRangeRound(bounds, aggregator));
  out.block = nodefl::kcagc::SpectralBlockSize(static_cast<uint64_t>(n), m, o.dims);
  SecureGram gram(slices, out.range.code, aggregator, o);
  NODEFL_TRY_ASSIGN(nodefl::kcagc::LeftSingularVectors u,
                    nodefl::kcagc::IterateLeftSubspace(static_cast<uint32_t>(n), m, o.dims, o.projection, &gram));
  out.basis = std::move(u.basis);
  out.singular_values = std::move(u.singular_values);
  out.steps = u.summary.steps;
  out.converged = u.summary.converged;
  out.cost = aggregator->counters() - before;
  return out;
}

}  // namespace nodefl::server::kcagc
