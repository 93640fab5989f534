// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/participant.h"

#include <Eigen/Dense>

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/spectral.h"

namespace nodefl::kcagc {

std::vector<float> DistanceContributions(const Matrix& points, const Matrix& centres) {
  return SquaredDistances(points, centres);
}

Result<std::vector<float>> SeedContributions(const Matrix& projected, uint32_t seed) {
  if (seed >= projected.rows()) return Status::InvalidArgument();
  return DistancesToPoint(projected, seed);
}

Result<Matrix> VirtualNodeRows(const Matrix& x, const Matrix& centres, const Intersections& groups, uint32_t part,
                               VirtualNodeKind kind) {
  if (part >= groups.parts || centres.cols() != x.cols() || groups.offsets.size() != groups.size() + 1u ||
      groups.keys.size() != static_cast<size_t>(groups.size()) * groups.parts) {
    return Status::InvalidArgument();
  }
  Matrix rows(groups.size(), x.cols());
  for (uint32_t g = 0; g < groups.size(); ++g) {
    if (kind == VirtualNodeKind::kCentre) {
      const int32_t c = groups.key(g, part);
      if (c < 0 || c >= centres.rows()) return Status::InvalidArgument();
      rows.row(g) = centres.row(c);
      continue;
    }
    if (groups.group_size(g) == 0) return Status::InvalidArgument();
    Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(x.cols());
    for (uint32_t e = groups.offsets[g]; e < groups.offsets[g + 1]; ++e) {
      if (groups.nodes[e] >= x.rows()) return Status::InvalidArgument();
      sum += x.row(groups.nodes[e]).cast<double>();
    }
    rows.row(g) = (sum / static_cast<double>(groups.group_size(g))).cast<float>();
  }
  return rows;
}

Result<std::vector<float>> JointSpectralContribution(const Matrix& x, const Matrix& block) {
  NODEFL_TRY_ASSIGN(const Matrix z, GramProduct(x, block));
  return std::vector<float>(z.data(), z.data() + z.size());  // row-major: node by node
}

std::vector<double> IntersectionWeights(const Intersections& groups) {
  std::vector<double> w(groups.size());
  for (uint32_t g = 0; g < groups.size(); ++g) w[g] = groups.group_size(g);
  return w;
}

}  // namespace nodefl::kcagc
