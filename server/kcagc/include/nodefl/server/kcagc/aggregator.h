// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The secure sums of kCAGC (Protocol 2 lines 13 and 28, Protocol 4) behind
// one interface, so that the in-process runs and the networked job share
// every line above it. One call is one aggregation round: each
// participant taking part submits a vector of floats, and only their
// element-wise sum comes back.
//
// SimulatedSecureAggregator computes that sum exactly the way the secure
// path does: every vector is coded with EncodeFixedPoint, the codes are
// added mod 2^32, the sum is read back with DecodeFixedPointSum; the masks
// the real service adds cancel in the sum, so its result is bit-identical to
// the real service's. (The real service plugs in as another Aggregator.)
//
// Counters, in the paper's units: a secure sum is one summed scalar
// (kCAGC Sec. 3.4 counts n k of them per Lloyd iteration of Protocol 2);
// a round is one vector aggregation (one exchange of masked vectors); bytes
// are what the participants upload, 4 per scalar per participant.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/secagg/fixed_point.h"

namespace nodefl::server::kcagc {

struct AggregationCounters {
  uint64_t rounds = 0;
  uint64_t scalars = 0;
  uint64_t uploaded_bytes = 0;
  uint64_t clipped = 0;  // values the code clipped: 0 under the range rule (nodefl/kcagc/range.h)

  AggregationCounters operator-(const AggregationCounters& o) const {
    return {rounds - o.rounds, scalars - o.scalars, uploaded_bytes - o.uploaded_bytes, clipped - o.clipped};
  }
};

class Aggregator {
 public:
  virtual ~Aggregator() = default;

  // The element-wise sum of `inputs` (one vector per participant taking
  // part, all of one length) under `code`. kInvalidArgument for no inputs,
  // lengths that differ or a bad code; kFailedPrecondition when more
  // participants take part than the code can sum without wrapping.
  [[nodiscard]] Result<std::vector<float>> Sum(std::span<const std::vector<float>> inputs,
                                               const nodefl::secagg::FixedPoint& code);

  const AggregationCounters& counters() const { return counters_; }

 protected:
  // The sum itself, inputs already checked; *clipped counts clipped values.
  virtual Result<std::vector<float>> Aggregate(std::span<const std::vector<float>> inputs,
                                               const nodefl::secagg::FixedPoint& code, uint64_t* clipped) = 0;

 private:
  AggregationCounters counters_;
};

class SimulatedSecureAggregator final : public Aggregator {
 protected:
  Result<std::vector<float>> Aggregate(std::span<const std::vector<float>> inputs, const nodefl::secagg::FixedPoint& code,
                                       uint64_t* clipped) override;
};

}  // namespace nodefl::server::kcagc
