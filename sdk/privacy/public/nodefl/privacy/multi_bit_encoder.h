// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// GW-LDP's multi-bit encoder for an embedding matrix H in [alpha, beta]^{n x h}
// (GW-LDP Algorithm 1, Theorem 1 and its proof in
// Appendix B), with the unbiased rectifier of the multi-bit encoder GW-LDP
// builds on (Sajadmanesh & Gatica-Perez 2021).
//
// Mechanism: a set S of cells is drawn uniformly without replacement from the
// n*h cells, independently of H. A sampled cell (i, j) becomes
// 2 t_ij - 1 in {-1, 1} with t_ij ~ Bernoulli of Lumos's Eq. 26 at budget
// eps/(mn) (see one_bit_encoder.h); every other cell becomes 0.
//
// How many cells: Algorithm 1, line 1 literally says "a set of m values",
// which would spend only m * eps/(mn) = eps/n. The proof in Appendix B instead
// charges eps/(mn) to each sampled cell and composes over at most m*n of them
// to reach eps, and the encoder's name and its use of eps/(mn) both point to
// m samples per row. nodefl implements |S| = m*n (m per row on average; the
// sampling is over all cells, as line 1 says), so each cell is sampled with
// probability m/h and one release costs exactly eps.
//
// Modes: the accounting above is sound against any observer of the released
// matrix (the set S is data-independent, so unsampled cells reveal nothing),
// so kStrict and kPaper coincide and no mode parameter is needed. The ledger
// records MultiBitParams::epsilon per released matrix.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

struct MultiBitParams {
  float lower = 0.0f;            // alpha
  float upper = 1.0f;            // beta
  double epsilon = 0.0;          // total budget of one released matrix
  uint32_t samples_per_row = 1;  // m: m*n cells are sampled in total
};

// eps / (m n), the budget each sampled cell is charged. InvalidArgument if
// the parameters do not validate for an n = rows by h = cols matrix: epsilon
// not finite or <= 0, lower/upper not finite or lower >= upper, rows, cols or
// m zero, m > cols, eps/(mn) above kMaxEpsilonPerBit (one_bit_encoder.h), or
// a recovered value that would overflow float.
Result<double> MultiBitEpsilonPerCell(const MultiBitParams& params, uint32_t rows, uint32_t cols);

// Algorithm 1. h_matrix and encoded_out are row-major rows x cols; encoded
// cells are in {-1, 0, 1} and exactly m*rows of them are nonzero. The sample
// is drawn with Knuth's selection sampling (one pass, exact, no scratch
// memory). Costs params.epsilon. InvalidArgument for bad parameters (as
// above), a size mismatch or a non-finite entry; OutOfRange for an entry
// outside [lower, upper] (never clamped). Nothing is drawn unless every input
// is valid; if the DRBG fails the output is zeroed and its error returned.
Status EncodeMultiBit(Drbg& rng, const MultiBitParams& params, Span<const float> h_matrix,
                      uint32_t rows, uint32_t cols, Span<int8_t> encoded_out);

// Unbiased estimate of H from one encoding (post-processing, costs nothing):
//   H^ = alpha + (beta - alpha)/2 * (1 + H* (h/m) (e+1)/(e-1)),  e = e^{eps/(mn)}.
// InvalidArgument for bad parameters, a size mismatch or a cell outside
// {-1, 0, 1} (nothing written then).
Status RecoverMultiBit(const MultiBitParams& params, Span<const int8_t> encoded, uint32_t rows,
                       uint32_t cols, Span<float> recovered_out);

}  // namespace nodefl
