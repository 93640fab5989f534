// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Adam (Kingma and Ba) over a flat parameter vector, as Lumos trains
// (Sec. VIII-A: Adam, learning rate 0.01). The server applies it to the
// averaged gradient of an epoch; the centralized baselines use the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nodefl::server::lumos {

struct AdamOptions {
  double learning_rate = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.0;  // L2, added to the gradient (as PyTorch's Adam does)
};

class Adam {
 public:
  Adam(size_t parameters, AdamOptions options);
  // params -= step(grads); false (nothing changed) for a size mismatch or a
  // non-finite gradient.
  bool Step(std::span<float> params, std::span<const float> grads);
  uint64_t steps() const { return steps_; }

 private:
  AdamOptions o_;
  std::vector<double> m_, v_;
  uint64_t steps_ = 0;
};

}  // namespace nodefl::server::lumos
