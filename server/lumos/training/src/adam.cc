// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/training/adam.h"

#include <cmath>

namespace nodefl::server::lumos {

Adam::Adam(size_t parameters, AdamOptions options) : o_(options), m_(parameters, 0.0), v_(parameters, 0.0) {}

bool Adam::Step(std::span<float> params, std::span<const float> grads) {
  if (params.size() != m_.size() || grads.size() != m_.size()) return false;
  for (float g : grads) {
    if (!std::isfinite(g)) return false;
  }
  ++steps_;
  const double c1 = 1.0 - std::pow(o_.beta1, static_cast<double>(steps_));
  const double c2 = 1.0 - std::pow(o_.beta2, static_cast<double>(steps_));
  for (size_t i = 0; i < params.size(); ++i) {
    const double g = grads[i] + o_.weight_decay * params[i];
    m_[i] = o_.beta1 * m_[i] + (1 - o_.beta1) * g;
    v_[i] = o_.beta2 * v_[i] + (1 - o_.beta2) * g * g;
    const double step = o_.learning_rate * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + o_.epsilon);
    params[i] = static_cast<float>(params[i] - step);
  }
  return true;
}

}  // namespace nodefl::server::lumos
