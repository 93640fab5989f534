// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalk's bin plan (Sec. 4.2, Alg. 2
// line 1): the server numbers the vertices at random and groups them into
// k bins. One implementation for the job and the in-process simulation, so
// both draw the same plan from the same seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nodefl::server::fedwalk {

// k = floor(ln |V|) (the paper's default and upper bound), within
// 1 .. kMaxBins.
uint8_t DefaultBins(size_t vertices);

// A uniformly random numbering of `participants` cut into `bins` equal
// ranges: every bin holds floor or ceil of |V|/k vertices, so none is empty
// when |V| >= k. Entries of ids that take no part are kAbsentBin.
std::vector<uint8_t> MakeBinPlan(const std::vector<uint32_t>& participants, uint32_t vertex_count, uint32_t bins,
                                 uint64_t seed);

}  // namespace nodefl::server::fedwalk
