// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The logistic function by table look-up for the SkipGram inner loop, where
// an exp() per (pair, target) would cost as much as the dot product itself.
//
// kCells = 4096 cells cover [-kLimit, kLimit) = [-8, 8), each 1/256 wide and
// holding sigma at its midpoint, so inside the range the error is at most
// max|sigma'| * half a cell = 0.25 / 512 < 5e-4. Outside the range sigma is
// taken as exactly 0 or 1 (as word2vec does past its MAX_EXP): the true value
// is then within sigma(-8) = 3.4e-4 of it, and the gradient of a pair the
// model already scores that confidently is left at its clamped value. The
// 16 KiB table stays in L1 next to the vectors being trained.
#pragma once

#include <array>
#include <cmath>

namespace nodefl::server::fedwalk {

class SigmoidTable {
 public:
  static constexpr int kCells = 4096;
  static constexpr float kLimit = 8.0f;
  static constexpr float kCellsPerUnit = kCells / (2 * kLimit);
  // Bound on |table(x) - sigma(x)| for every finite x (see above).
  static constexpr double kMaxError = 5e-4;

  SigmoidTable() {
    for (int i = 0; i < kCells; ++i) {
      const double x = -kLimit + (i + 0.5) / kCellsPerUnit;
      cells_[i] = static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    }
  }

  float operator()(float x) const {
    // Written so that a NaN lands in the first branch instead of indexing
    // with an undefined conversion.
    if (!(x < kLimit)) return 1.0f;
    if (!(x > -kLimit)) return 0.0f;
    // (x + 8) * 256 can round up to exactly kCells for x just below 8.
    const int cell = static_cast<int>((x + kLimit) * kCellsPerUnit);
    return cells_[cell < kCells ? cell : kCells - 1];
  }

 private:
  std::array<float, kCells> cells_{};
};

}  // namespace nodefl::server::fedwalk
