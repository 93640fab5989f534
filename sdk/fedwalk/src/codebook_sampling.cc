// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/codebook_sampling.h"

namespace nodefl::fedwalk {

Result<uint32_t> SampleCodebookRow(Span<const CodebookEntry> row, Drbg& rng) {
  if (row.empty()) return Status::FailedPrecondition();
  const uint64_t i = rng.UniformBelow(row.size());
  const uint32_t coin = rng.NextU32() >> 1;  // uniform in [0, 2^31)
  NODEFL_TRY(rng.status());
  const CodebookEntry& e = row[static_cast<size_t>(i)];
  if (coin < e.accept_q31) return e.vertex;
  if (e.alias >= row.size()) return Status::DataLoss();
  return row[e.alias].vertex;
}

}  // namespace nodefl::fedwalk
