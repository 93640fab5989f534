// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// AliasTable: O(1) draws from a fixed discrete distribution (Walker's alias
// method, built with Vose's linear-time pairing), for the exponential
// mechanism of FedWalk Eq. 12 when one vertex's
// distribution is drawn from many times. The table adds no privacy cost of
// its own: it reproduces the distribution of its log-weights (up to the
// 2^-53 resolution of a DRBG double per column), so the guarantee is that of
// the log-weights it was built from, i.e. what ExponentialMechanismEpsilon()
// reports for the params given to ScoresToLogWeights().
//
// Storage is the caller's: n doubles and n uint32_t (12 bytes per candidate),
// and nothing else. Build needs no scratch because the worklists of Vose's
// method are threaded as linked lists through the alias slots, which are
// free until their column is finished. The table keeps views into that
// storage: it must outlive the table and not change while the table is used.
//
// Cost: Build is O(n) with n exp() calls; Sample is O(1) with two DRBG draws;
// Probability(i) is O(n) (it is for tests and for reporting, not for the hot
// path).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

class AliasTable {
 public:
  // Largest supported number of candidates: aliases are 32-bit and the
  // value 2^32 - 1 itself is never an index, which frees it as list end.
  static constexpr size_t kMaxSize = UINT32_MAX;

  AliasTable() = default;

  // Builds the table for Pr[i] = exp(lw_i - m) / sum_j exp(lw_j - m), with m
  // the largest log-weight, in the first n = log_weights.size() slots of
  // both storage spans. Candidates with lw_i = -inf (or whose weight
  // underflows relative to the largest, probability below 1e-323) get
  // probability exactly 0: no column keeps or aliases them. Floating-point
  // leftovers of the pairing get threshold 1, as in Vose's method.
  //
  // Errors (the table is left empty, size() == 0, and the storage is not
  // touched): kInvalidArgument for log-weights ValidateLogWeights rejects
  // (empty, NaN, +inf, all -inf), for n > kMaxSize, and for storage spans
  // shorter than n.
  Status Build(Span<const double> log_weights, Span<double> probability_storage,
               Span<uint32_t> alias_storage);

  // One draw. The table must be built (checked). Like every Drbg draw this
  // cannot fail at the call site: a caller that releases the index must
  // check rng.status() first, or use TrySample.
  size_t Sample(Drbg& rng) const;

  // Sample, but kFailedPrecondition on an unbuilt table and the DRBG's
  // status if it failed, so a failed generator never yields a release.
  Result<size_t> TrySample(Drbg& rng) const;

  size_t size() const { return probability_.size(); }
  bool built() const { return !probability_.empty(); }

  // The probability with which Sample returns i, reconstructed from the
  // table (own column's threshold plus every column that aliases i, over n);
  // 0 for i >= size(). O(n). Useful to report the mass a caller truncated.
  double Probability(size_t i) const;

 private:
  Span<const double> probability_;  // per column: keep the column's own index if u < p
  Span<const uint32_t> alias_;      // per column: the index returned otherwise
};

}  // namespace nodefl
