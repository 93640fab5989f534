// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/multi_bit_encoder.h"

#include <cfloat>
#include <cmath>
#include <cstddef>

#include "nodefl/privacy/one_bit_encoder.h"

namespace nodefl {
namespace {

// Why the rectifier is unbiased. Write u = (H - alpha)/(beta - alpha),
// e = e^{eps/(mn)}, q = m/h (the chance that a given cell is among the m*n
// sampled out of n*h). A sampled cell is 2t - 1 with
//   E[2t - 1] = 2/(e+1) + 2u (e-1)/(e+1) - 1 = (e-1)/(e+1) (2u - 1),
// an unsampled one is 0, and sampling is independent of t, so
//   E[H*] = q (e-1)/(e+1) (2u - 1).
// Solving for u: u = (1 + E[H*] (h/m)(e+1)/(e-1)) / 2, and as the map is
// affine, plugging H* itself in gives an unbiased estimate of u, hence of
//   H = alpha + (beta - alpha) u.
// (e+1)/(e-1) = 1/tanh(eps/(2mn)), which keeps precision when mn is large.
double RecoveryHalfSpan(const MultiBitParams& p, uint32_t cols, double eps_cell) {
  const double range = static_cast<double>(p.upper) - static_cast<double>(p.lower);
  return 0.5 * range * (static_cast<double>(cols) / static_cast<double>(p.samples_per_row)) /
         std::tanh(0.5 * eps_cell);
}

Status CheckSizes(uint32_t rows, uint32_t cols, size_t a, size_t b) {
  const uint64_t cells = static_cast<uint64_t>(rows) * cols;  // < 2^64, no overflow
  if (cells > SIZE_MAX || a != cells || b != cells) return Status::InvalidArgument();
  return Status::Ok();
}

}  // namespace

Result<double> MultiBitEpsilonPerCell(const MultiBitParams& params, uint32_t rows, uint32_t cols) {
  if (!std::isfinite(params.epsilon) || !(params.epsilon > 0.0)) return Status::InvalidArgument();
  if (!std::isfinite(params.lower) || !std::isfinite(params.upper) ||
      !(params.lower < params.upper)) {
    return Status::InvalidArgument();
  }
  if (rows == 0 || cols == 0 || params.samples_per_row == 0 || params.samples_per_row > cols) {
    return Status::InvalidArgument();
  }
  const double sampled = static_cast<double>(params.samples_per_row) * static_cast<double>(rows);
  const double eps_cell = params.epsilon / sampled;
  if (!(eps_cell > 0.0) || !(eps_cell <= kMaxEpsilonPerBit)) return Status::InvalidArgument();
  // Recovered values are floats; refuse parameters whose estimates would not be.
  const double mid = 0.5 * (static_cast<double>(params.lower) + static_cast<double>(params.upper));
  const double extreme = std::fabs(mid) + RecoveryHalfSpan(params, cols, eps_cell);
  if (!(extreme <= static_cast<double>(FLT_MAX))) return Status::InvalidArgument();
  return eps_cell;
}

Status EncodeMultiBit(Drbg& rng, const MultiBitParams& params, Span<const float> h_matrix,
                      uint32_t rows, uint32_t cols, Span<int8_t> encoded_out) {
  NODEFL_TRY_ASSIGN(const double eps_cell, MultiBitEpsilonPerCell(params, rows, cols));
  NODEFL_TRY(CheckSizes(rows, cols, h_matrix.size(), encoded_out.size()));
  for (const float v : h_matrix) {
    if (!std::isfinite(v)) return Status::InvalidArgument();
    if (v < params.lower || v > params.upper) return Status::OutOfRange();
  }
  NODEFL_TRY(rng.status());

  const double range = static_cast<double>(params.upper) - static_cast<double>(params.lower);
  const uint64_t cells = static_cast<uint64_t>(rows) * cols;
  uint64_t needed = static_cast<uint64_t>(params.samples_per_row) * rows;
  for (uint64_t t = 0; t < cells; ++t) {
    // Selection sampling (Knuth, Algorithm S): take cell t with probability
    // needed / (cells - t). Every (m n)-subset is equally likely and exactly
    // m n cells are taken, as the composition in Appendix B requires.
    const size_t i = static_cast<size_t>(t);
    if (needed == 0 || !rng.BernoulliRational(needed, cells - t)) {
      encoded_out[i] = 0;
      continue;
    }
    --needed;
    double fraction =
        (static_cast<double>(h_matrix[i]) - static_cast<double>(params.lower)) / range;
    fraction = std::fmin(std::fmax(fraction, 0.0), 1.0);
    encoded_out[i] = rng.Bernoulli(OneBitProbabilityOfOne(fraction, eps_cell)) ? 1 : -1;
  }

  const Status s = rng.status();
  if (!s.ok()) {
    // Zero is "not sampled": nothing a caller could leak by mistake.
    for (int8_t& v : encoded_out) v = 0;
  }
  return s;
}

Status RecoverMultiBit(const MultiBitParams& params, Span<const int8_t> encoded, uint32_t rows,
                       uint32_t cols, Span<float> recovered_out) {
  NODEFL_TRY_ASSIGN(const double eps_cell, MultiBitEpsilonPerCell(params, rows, cols));
  NODEFL_TRY(CheckSizes(rows, cols, encoded.size(), recovered_out.size()));
  for (const int8_t v : encoded) {
    if (v < -1 || v > 1) return Status::InvalidArgument();
  }
  const double mid = 0.5 * (static_cast<double>(params.lower) + static_cast<double>(params.upper));
  const double half_span = RecoveryHalfSpan(params, cols, eps_cell);
  for (size_t i = 0; i < encoded.size(); ++i) {
    recovered_out[i] = static_cast<float>(mid + static_cast<double>(encoded[i]) * half_span);
  }
  return Status::Ok();
}

}  // namespace nodefl
