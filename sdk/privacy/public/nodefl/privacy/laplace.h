// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Continuous Laplace noise Lap(0, b), density exp(-|x|/b) / (2b): the noise
// FedWalk adds to each bin count of a device's degree vector (seed
// FedWalk Sec. 4.2 "c_i values are then noised with
// Laplacian noise Lap(0, 1/epsilon)", Alg. 2 line 16). nodefl uses it only
// in PrivacyMode::kPaper, to reproduce the paper.
//
// Guarantee. Over the reals, value + Lap(0, Delta/epsilon) is epsilon-DP for
// a query of L1 sensitivity Delta. Computed in IEEE doubles it is NOT exactly
// epsilon-DP: log() of a 52-bit uniform and the rounding of value + noise
// leave gaps and irregular low bits in the output, so some outputs are
// possible for one input and impossible for a neighbouring one (Mironov,
// "On significance of the least significant bits for differential privacy",
// CCS 2012). An observer who keeps the full double can exploit that. This is
// why strict mode releases integer counts with the exact discrete Laplace
// mechanism (discrete_laplace.h) instead; the epsilon a caller records for a
// paper-mode release is the idealised real-arithmetic figure.
#pragma once

#include "nodefl/core/result.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

// One draw of Lap(0, scale): an Exp(1) variate -log(U), U uniform on (0, 1)
// (never 0, so the log is finite), times `scale`, with an independent random
// sign. `scale` must be finite and > 0 (programming error otherwise; checked
// input goes through LaplaceMechanism). Does not check the DRBG: callers
// check rng.status() before releasing anything built from the draw.
double SampleLaplace(Drbg& rng, double scale);

// value + Lap(0, l1_sensitivity / epsilon): epsilon-DP over the reals for a
// query of the given L1 sensitivity (see the caveat above). Returns
// kInvalidArgument for a non-finite value, a non-finite or non-positive
// sensitivity or epsilon, or a scale that overflows or underflows; the
// DRBG's error if it has failed (nothing is released then); kOutOfRange if
// value + noise is not finite.
Result<double> LaplaceMechanism(Drbg& rng, double value, double l1_sensitivity, double epsilon);

}  // namespace nodefl
