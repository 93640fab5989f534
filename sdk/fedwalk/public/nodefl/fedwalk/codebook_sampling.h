// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Drawing from a codebook row (FedWalk Eq. 12 restricted to the row's
// top-K, renormalised): the device's side of the walk encoder. The row's
// layout is the contract's (hct_format.h, CodebookEntry); the draw is the
// device's.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/random/drbg.h"

namespace nodefl::fedwalk {

// Draws an encoded vertex from a row's alias table. kFailedPrecondition for
// an empty row, kDataLoss for an alias index out of range, the DRBG's error
// if it failed.
Result<uint32_t> SampleCodebookRow(Span<const CodebookEntry> row, Drbg& rng);

}  // namespace nodefl::fedwalk
