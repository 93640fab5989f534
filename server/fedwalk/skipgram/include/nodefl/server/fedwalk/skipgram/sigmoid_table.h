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
// 16 KiB table stays in L1 next to the vectors being trained. A NaN reads
// as 0.
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
    cells_[0] = 0.0f;
    for (int i = 0; i < kCells; ++i) {
      const double x = -kLimit + (i + 0.5) / kCellsPerUnit;
      cells_[i + 1] = static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    }
    cells_[kCells + 1] = 1.0f;
  }

  // Branch-free (the sign of a score is hard to predict): the position is
  // clamped into [0, kCells + 1], whose end cells hold exactly 0 and 1. A
  // NaN fails the first comparison and reads as 0.
  float operator()(float x) const {
    float position = (x + kLimit) * kCellsPerUnit + 1.0f;
    position = position > 0.0f ? position : 0.0f;
    position = position < kCells + 1.0f ? position : kCells + 1.0f;
    return cells_[static_cast<int>(position)];
  }

 private:
  // cells_[1 + i] is cell i of the range; cells_[0] and cells_[kCells + 1]
  // stand for everything below and above it.
  std::array<float, kCells + 2> cells_{};
};

}  // namespace nodefl::server::fedwalk
