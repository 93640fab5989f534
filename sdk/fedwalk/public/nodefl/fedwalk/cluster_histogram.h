// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The one release a device makes per round of strict FedWalk's
// cluster-histogram job (histogram_format.h): h_v[c] = the number of v's
// neighbours in cluster c of the public partition, plus exact discrete
// Laplace noise. Pure functions over caller memory, shared by the device
// role (histogram_role.h) and the server's in-process simulation
// (nodefl-histogram-bench), so both release exactly the same thing.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/random/drbg.h"

namespace nodefl::fedwalk {

// One neighbour of the device: its id (filled in by the app) and its
// cluster in the current round's partition (filled in by PartitionFilter;
// kAbsentCluster while unknown or when the neighbour takes no part).
struct HistogramNeighbour {
  uint32_t id = 0;
  uint16_t cluster = kAbsentCluster;
};

// Zeroes `cells` (one per cluster) and counts every neighbour whose cluster
// is not kAbsentCluster. kInvalidArgument (cells zeroed) if a cluster is
// >= cells.size(): the partition filter never lets one through, so that is
// a caller error.
Status CountClusterNeighbours(Span<const HistogramNeighbour> neighbours, Span<int32_t> cells);

// Noises the counts in place for an epsilon-edge-DP release: every cell gets
// independent exact discrete Laplace noise P(k) ∝ exp(-|k|·epsilon'), i.e.
// scale t = 1/epsilon rounded up to a rational (discrete_laplace.h), so the
// delivered epsilon' <= epsilon.
//
// Sensitivity. Neighbouring inputs differ in one edge (v, u): u is counted
// or not. u falls in exactly one cluster of the public partition (or none,
// if absent), so exactly one cell changes, by exactly 1: the L1
// sensitivity is 1 for any partition and any number of clusters. The noise
// does not depend on the counts, the degree or the partition.
//
// Results saturate at the int32 range (post-processing). *epsilon_spent =
// epsilon' (what the ledger must record). On error every cell is zeroed,
// *epsilon_spent = 0 (when non-null) and nothing may be released:
// kInvalidArgument for empty cells, a null epsilon_spent or an epsilon the
// discrete scale rejects; the DRBG's error if it failed.
Status NoiseClusterHistogram(Drbg& rng, double epsilon, Span<int32_t> cells, double* epsilon_spent);

// Both steps: the release of one round, ready to upload.
Status MakeClusterHistogram(Drbg& rng, double epsilon, Span<const HistogramNeighbour> neighbours,
                            Span<int32_t> cells, double* epsilon_spent);

}  // namespace nodefl::fedwalk
