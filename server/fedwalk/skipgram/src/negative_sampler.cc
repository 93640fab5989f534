// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/negative_sampler.h"

#include <cmath>
#include <limits>

namespace nodefl::server::fedwalk {

std::optional<NegativeSampler> NegativeSampler::FromCounts(std::span<const uint64_t> counts, double power) {
  const size_t n = counts.size();
  if (n == 0 || n >= std::numeric_limits<uint32_t>::max() || !std::isfinite(power) || power < 0) {
    return std::nullopt;
  }
  // Vose's method in double: scaled[i] = n * p_i, cells below 1 are topped
  // up from cells above 1.
  std::vector<double> scaled(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = counts[i] == 0 ? 0.0 : std::pow(static_cast<double>(counts[i]), power);
    total += scaled[i];
  }
  if (!(total > 0) || !std::isfinite(total)) return std::nullopt;
  for (double& s : scaled) s *= static_cast<double>(n) / total;

  // Zero-weight cells go last into `small` so they are paired first, while
  // heavy cells certainly remain to fill them.
  std::vector<uint32_t> small, large, zero;
  for (uint32_t i = 0; i < n; ++i) (scaled[i] == 0 ? zero : scaled[i] < 1.0 ? small : large).push_back(i);
  small.insert(small.end(), zero.begin(), zero.end());
  uint32_t heaviest = 0;
  for (uint32_t i = 1; i < n; ++i) heaviest = scaled[i] > scaled[heaviest] ? i : heaviest;

  NegativeSampler sampler;
  sampler.cells_.resize(n);
  constexpr double kCoin = 4294967296.0;  // 2^32
  auto set_cell = [&](uint32_t i, double keep, uint32_t alias) {
    const double t = std::round(keep * kCoin);
    sampler.cells_[i] = {t >= kCoin - 1 ? std::numeric_limits<uint32_t>::max() : static_cast<uint32_t>(t), alias};
  };
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back();
    small.pop_back();
    const uint32_t l = large.back();
    set_cell(s, scaled[s], l);
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left is 1 up to rounding: full cells that alias themselves.
  for (uint32_t i : large) sampler.cells_[i] = {std::numeric_limits<uint32_t>::max(), i};
  for (uint32_t i : small) sampler.cells_[i] = {std::numeric_limits<uint32_t>::max(), i};
  // Rounding must never let a zero-count vertex be drawn.
  for (uint32_t i : zero) {
    if (sampler.cells_[i].alias == i) sampler.cells_[i] = {0, heaviest};
  }
  return sampler;
}

std::vector<double> NegativeSampler::Probabilities() const {
  const double n = static_cast<double>(cells_.size());
  std::vector<double> p(cells_.size(), 0.0);
  for (uint32_t i = 0; i < cells_.size(); ++i) {
    const double keep = static_cast<double>(cells_[i].threshold) / 4294967296.0;
    if (cells_[i].alias == i) {
      p[i] += 1.0 / n;
    } else {
      p[i] += keep / n;
      p[cells_[i].alias] += (1.0 - keep) / n;
    }
  }
  return p;
}

}  // namespace nodefl::server::fedwalk
