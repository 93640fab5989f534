// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The fixed-point range rule of every kCAGC secure sum. Secure aggregation
// adds integers mod 2^32 (sdk/secagg/fixed_point.h: q = round(x scale),
// clipped to ±clip); the sum of L codes decodes exactly while
// L clip scale < 2^31. kCAGC sums squared distances only, and each one a
// participant submits is bounded before clustering starts:
//
//   B_l = 4 max_i ‖x_i^l‖² (1 + 2^-8)
//
// over P_l's filtered rows. Every point a distance is measured from or to is
// a row, a projected row (‖x V‖ <= ‖x‖ for orthonormal V), or a convex
// combination of rows (a centre, a virtual node, a seed), so
// ‖a - b‖² <= (‖a‖ + ‖b‖)² <= 4 max ‖x‖²; the factor 1 + 2^-8 covers float
// rounding of a distance (a sum of m_l float terms errs by at most
// m_l 2^-24 relative, below 2^-8 for m_l up to 65,536).
//
// Before clustering, one extra secure sum of one scalar per participant
// (the range round) makes clip = Σ_l B_l public; the working code is then
// clip and the largest power of two `scale` with L clip scale < 2^31, so
// nothing is ever clipped and no sum wraps. Each value is off by at most
// 1/(2 scale) after rounding, a sum of L by L/(2 scale) (docs/kcagc.md has
// the figures).
//
// The range round needs a code of its own, fixed in advance: clip 2^16 (a
// participant whose B_l exceeds it refuses, kOutOfRange: its features must
// be rescaled first; filtered binary features stay far below, whitened
// rows below 4) and the largest power-of-two scale that L such values can
// be summed with (the largest power of two below 2^15 / L). A participant
// submits B_l rounded UP to that code's grid (a multiple of 1/scale, at
// most L 2^-14), so the rounding can never make the bound smaller and
// widens clip by at most L^2 2^-14; the server reads the sum back through
// float and widens it by 2^-20 relative to cover that conversion.
//
// The joint mode (spectral.h) sums other values: at each step P_l submits
// Z^l = X^l ((X^l)^T Q) for a public block Q whose columns are orthonormal
// (sent as floats). Each entry is bounded by what P_l holds:
//
//   |Z^l_ij| = |<x_i^l, (X^l)^T q_j>| <= ‖x_i^l‖ ‖X^l‖_2 ‖q_j‖
//            <= G_l = max_i ‖x_i^l‖ ‖X^l‖_F (1 + 2^-8)
//
// (‖X^l‖_2 <= ‖X^l‖_F; ‖q_j‖ = 1 up to its rounding to float, 2^-24
// relative, and Z^l is rounded once to float: the factor covers both). The
// same range round makes Σ_l G_l public and fixes the working code, so the
// joint mode clips nothing either. The bound is far above a typical entry
// (Y_ij ~ σ_1² / sqrt(n) at most for the leading direction), so the
// resolution relative to Y is what docs/kcagc.md reports and the tests check.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/secagg/fixed_point.h"

namespace nodefl::kcagc {

inline constexpr double kRangeClip = 65536.0;  // 2^16

// B_l for a participant's filtered slice (0 for an empty one).
double DistanceBound(const Matrix& filtered);

// G_l for the joint mode's sums (0 for an empty slice).
double GramBound(const Matrix& filtered);

// The public code of the range round for L participants.
[[nodiscard]] Result<secagg::FixedPoint> RangeCode(uint32_t participants);

// What P_l submits in the range round: B_l rounded up to the code's grid.
// kOutOfRange when B_l > the code's clip, kInvalidArgument when not finite.
[[nodiscard]] Result<float> RangeSubmission(double bound, const secagg::FixedPoint& range_code);

// The server's clip from the decoded range sum: widened by 2^-20 and
// rounded up to a float; 1 when the sum is 0 (every value is then 0).
float ClipFromRangeSum(float decoded_sum);

// The working code: clip and the largest power-of-two scale with
// L clip scale < 2^31 (and MaxSummands >= L). kInvalidArgument for a clip
// that is not positive and finite or L = 0; kOutOfRange when no float scale fits.
[[nodiscard]] Result<secagg::FixedPoint> CodeForClip(float clip, uint32_t participants);

}  // namespace nodefl::kcagc
