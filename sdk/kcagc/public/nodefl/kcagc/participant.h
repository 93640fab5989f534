// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A participant's steps in kCAGC Protocols 2 and 3, the calls the job makes
// on P_l between secure sums. Each computes from P_l's own slice only; what
// leaves P_l is the vector returned, and it leaves only through a secure sum
// (the server learns the sum over participants, never a participant's part).
//
//   distances      Protocol 2 lines 11 and 26: d^l_{i,r} = ‖x_i^l - μ_r^l‖²
//                  for every point i and centre r (n k values, i-major)
//   seed distances joint seeding: d^l_i = ‖p_i^l - p_s^l‖² to the seed point
//                  s the server just chose (p: projected rows)
//   centre update  Protocol 2 lines 19 and 34, kmeans.h's UpdateCentres on the
//                  slice with the assignment the server sent (+ weights)
//   virtual nodes  Protocol 3 lines 11-15: one row per intersection
//   joint space    not the paper's (the joint mode, spectral.h): for the
//                  public block Q_t, Z^l = X^l ((X^l)^T Q_t), n b values
//
// Virtual nodes come in two kinds. kCentre is Protocol 3 line 13 as
// written: y_i^l is the centre of P_l's cluster that contains intersection
// i. kIntersection is the mean of the intersection's own rows on P_l's
// columns, what Sec. 3.4's text describes ("a virtual node is constructed
// locally by the center of the intersected cluster"). The two differ when a
// local cluster is split by the other participants' clusters: the centre of
// the whole local cluster then stands for every piece of it.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

enum class VirtualNodeKind : uint8_t {
  kCentre,        // Protocol 3 line 13
  kIntersection,  // Sec. 3.4's text
};

// Protocol 2 lines 11 and 26 (and line 16 of Protocol 3 on virtual nodes).
std::vector<float> DistanceContributions(const Matrix& points, const Matrix& centres);

// Joint seeding: the distances of every (projected) point to point `seed`.
// kInvalidArgument for a seed out of range.
[[nodiscard]] Result<std::vector<float>> SeedContributions(const Matrix& projected, uint32_t seed);

// One row per intersection on this participant's columns.
//   filtered: the slice (n x m_l); centres: the clusters of `part` on the
//   slice (the participant's local clusters, or in the tree arrangement the
//   child subtree's clusters); part: which key of `groups` is those clusters.
// kInvalidArgument for a part, key or node out of range or shapes that differ.
[[nodiscard]] Result<Matrix> VirtualNodeRows(const Matrix& filtered, const Matrix& centres,
                                             const Intersections& groups, uint32_t part, VirtualNodeKind kind);

// The joint mode's step (spectral.h): X^l ((X^l)^T Q) on P_l's filtered
// slice for the public block Q (n x b), row-major (node i's b values
// together). kInvalidArgument when Q has other than n rows.
[[nodiscard]] Result<std::vector<float>> JointSpectralContribution(const Matrix& filtered, const Matrix& block);

// The weights of the virtual nodes (kCAGC Sec. 3.4): the intersections' sizes.
std::vector<double> IntersectionWeights(const Intersections& groups);

}  // namespace nodefl::kcagc
