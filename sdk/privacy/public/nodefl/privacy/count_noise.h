// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Noise for a device's vector of bin counts: FedWalk's degree vector
// c_v = (c'_1, ..., c'_k), c'_i = c_i + noise (FedWalk
// Sec. 4.2, Alg. 2 lines 15-16).
//
// Sensitivity. c_i counts the device's neighbours in bin i. Adding or
// removing one of the device's edges changes exactly one c_i by exactly 1,
// so the vector's L1 sensitivity is 1 and per-bin noise of scale 1/epsilon
// makes the whole vector epsilon-DP (edge-level, for this one device's
// release). Note for accounting across devices: an edge (u, v) is counted
// in BOTH u's and v's vectors, so an observer that sees both uploads (the
// server) learns about that edge from two epsilon-DP releases.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

// noised_out[i] = counts[i] + noise_i, independent noise per bin:
//   * kPaper: noise ~ Lap(0, 1/epsilon) in doubles, exactly FedWalk Alg. 2
//     (real-valued, may be negative). *epsilon_spent = epsilon, the
//     real-arithmetic figure; floating-point Laplace is not exactly
//     epsilon-DP (see laplace.h).
//   * kStrict: noise ~ exact discrete Laplace with t = 1/epsilon rounded up
//     to a rational (discrete_laplace.h); every output is an integer (held in
//     a double). *epsilon_spent = the delivered epsilon' (<= epsilon, within
//     1e-6 relative), exactly epsilon'-DP.
// Errors (nothing to release; noised_out is zeroed and *epsilon_spent = 0
// when it is non-null): kInvalidArgument for counts/noised_out size mismatch,
// a null epsilon_spent, an unknown mode, or an epsilon the mode's mechanism
// rejects (non-finite, <= 0, or out of the discrete scale's range); the
// DRBG's error if it has failed.
Status NoiseCounts(Drbg& rng, PrivacyMode mode, double epsilon, Span<const uint32_t> counts,
                   Span<double> noised_out, double* epsilon_spent);

}  // namespace nodefl
