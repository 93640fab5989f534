// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/alias_table.h"

#include <cmath>

#include "nodefl/privacy/exponential_mechanism.h"

namespace nodefl {
namespace {

// End of a worklist. Never a valid index because n <= kMaxSize = 2^32 - 1.
constexpr uint32_t kEnd = UINT32_MAX;

}  // namespace

Status AliasTable::Build(Span<const double> log_weights, Span<double> probability_storage,
                         Span<uint32_t> alias_storage) {
  probability_ = Span<const double>();
  alias_ = Span<const uint32_t>();
  const size_t n = log_weights.size();
  if (n > kMaxSize) return Status::InvalidArgument();
  if (probability_storage.size() < n || alias_storage.size() < n) {
    return Status::InvalidArgument();
  }
  NODEFL_TRY_ASSIGN(const double max, ValidateLogWeights(log_weights));
  Span<double> prob = probability_storage.first(n);
  Span<uint32_t> alias = alias_storage.first(n);

  // Weights relative to the largest: the largest is exactly 1, so the sum is
  // in [1, n] and n / sum in [1, n]; a positive weight therefore never
  // scales down to 0, and a zero weight stays exactly 0.
  double total = 0.0;
  size_t argmax = 0;
  for (size_t i = 0; i < n; ++i) {
    prob[i] = std::exp(log_weights[i] - max);
    total += prob[i];
    if (log_weights[i] == max) argmax = i;
  }
  const double scale = static_cast<double>(n) / total;

  // Vose: scaled weights below 1 ("small") donate the rest of their column
  // to one at or above 1 ("large"). Both worklists live in the alias slots:
  // alias[i] is the next item of i's list until i's column is finished.
  uint32_t small = kEnd;
  uint32_t large = kEnd;
  for (size_t k = n; k-- > 0;) {
    const uint32_t i = static_cast<uint32_t>(k);
    prob[i] *= scale;
    if (prob[i] < 1.0) {
      alias[i] = small;
      small = i;
    } else {
      alias[i] = large;
      large = i;
    }
  }
  while (small != kEnd && large != kEnd) {
    const uint32_t s = small;
    small = alias[s];
    const uint32_t l = large;
    alias[s] = l;  // prob[s] already holds s's share of its own column
    // (a + b) - 1 rather than a - (1 - b): the form with less cancellation
    // when b is tiny. a >= 1, so the result is never negative.
    prob[l] = (prob[l] + prob[s]) - 1.0;
    if (prob[l] < 1.0) {
      large = alias[l];
      alias[l] = small;
      small = l;
    }
  }
  // What is left differs from 1 only by rounding, so it keeps its whole
  // column, except that an excluded candidate must stay at probability 0
  // even then: its column goes to the largest weight instead.
  while (large != kEnd) {
    const uint32_t next = alias[large];
    prob[large] = 1.0;
    alias[large] = large;
    large = next;
  }
  while (small != kEnd) {
    const uint32_t next = alias[small];
    if (std::exp(log_weights[small] - max) == 0.0) {
      prob[small] = 0.0;
      alias[small] = static_cast<uint32_t>(argmax);
    } else {
      prob[small] = 1.0;
      alias[small] = small;
    }
    small = next;
  }
  probability_ = prob;
  alias_ = alias;
  return Status::Ok();
}

size_t AliasTable::Sample(Drbg& rng) const {
  NODEFL_CHECK(built());
  const size_t column = static_cast<size_t>(rng.UniformBelow(probability_.size()));
  // u < 1 always and u >= 0 always, so thresholds 1 and 0 are exact.
  const double u = rng.UniformDouble();
  return u < probability_[column] ? column : static_cast<size_t>(alias_[column]);
}

Result<size_t> AliasTable::TrySample(Drbg& rng) const {
  if (!built()) return Status::FailedPrecondition();
  const size_t index = Sample(rng);
  NODEFL_TRY(rng.status());
  return index;
}

double AliasTable::Probability(size_t i) const {
  const size_t n = probability_.size();
  if (i >= n) return 0.0;
  double mass = 0.0;
  for (size_t column = 0; column < n; ++column) {
    if (column == i) mass += probability_[column];
    if (alias_[column] == i) mass += 1.0 - probability_[column];
  }
  return mass / static_cast<double>(n);
}

}  // namespace nodefl
