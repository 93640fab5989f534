// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/range.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nodefl::kcagc {
namespace {

constexpr double kTwo31 = 2147483648.0;
constexpr double kBoundMargin = 1.0 + 1.0 / 256.0;
constexpr double kSumWidening = 1.0 + 1.0 / 1048576.0;

}  // namespace

double DistanceBound(const Matrix& x) {
  double largest = 0.0;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double s = x.row(i).cast<double>().squaredNorm();
    if (s > largest) largest = s;
  }
  return 4.0 * largest * kBoundMargin;
}

double GramBound(const Matrix& x) {
  double largest = 0.0, total = 0.0;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double s = x.row(i).cast<double>().squaredNorm();
    largest = std::max(largest, s);
    total += s;
  }
  return std::sqrt(largest) * std::sqrt(total) * kBoundMargin;
}

Result<secagg::FixedPoint> RangeCode(uint32_t participants) { return CodeForClip(static_cast<float>(kRangeClip), participants); }

Result<float> RangeSubmission(double bound, const secagg::FixedPoint& code) {
  if (!std::isfinite(bound) || bound < 0.0) return Status::InvalidArgument();
  if (bound > code.clip) return Status::OutOfRange();
  // ceil onto the grid; the grid point is exact in float (an integer below
  // 2^24 times a power of two).
  const double up = std::ceil(bound * code.scale) / code.scale;
  if (up > code.clip) return static_cast<float>(code.clip);  // bound == clip up to rounding
  return static_cast<float>(up);
}

float ClipFromRangeSum(float decoded_sum) {
  if (!(decoded_sum > 0.0f)) return 1.0f;
  const double widened = double{decoded_sum} * kSumWidening;
  auto clip = static_cast<float>(widened);
  if (double{clip} < widened) clip = std::nextafter(clip, std::numeric_limits<float>::infinity());
  return clip;
}

Result<secagg::FixedPoint> CodeForClip(float clip, uint32_t participants) {
  if (!(clip > 0.0f) || !std::isfinite(clip) || participants == 0) return Status::InvalidArgument();
  // scale = 2^e, the largest with L clip 2^e < 2^31: start from the
  // logarithm and step down past any rounding of it or of the codes.
  int e = static_cast<int>(std::floor(std::log2(kTwo31 / (static_cast<double>(participants) * clip)))) + 1;
  for (; e >= -120; --e) {
    const secagg::FixedPoint code{clip, std::ldexp(1.0f, e)};
    if (static_cast<double>(participants) * clip * code.scale < kTwo31 && secagg::MaxSummands(code) >= participants) return code;
  }
  return Status::OutOfRange();
}

}  // namespace nodefl::kcagc
