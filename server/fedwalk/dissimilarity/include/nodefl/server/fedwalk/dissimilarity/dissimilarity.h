// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's all-pairs dissimilarity pass (FedWalk
// Alg. 2 line 13): every pair of vertices in a FeatureStore, on several
// threads, straight into a float32 CondensedMatrix. The metric follows the
// store: DtwL1 for ordered degree matrices (paper mode), HistogramEmd
// (histogram_emd.h) for the strict HCT job's noised histograms.
#pragma once

#include <cstdint>
#include <functional>

#include "nodefl/server/fedwalk/common/condensed_matrix.h"
#include "nodefl/server/fedwalk/dissimilarity/dtw.h"
#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace nodefl::server::fedwalk {

using DissimilarityProgress = std::function<void(uint64_t done_pairs, uint64_t total_pairs)>;

// Computes all n(n-1)/2 dissimilarities of `features` on `threads` worker
// threads (0: std::thread::hardware_concurrency()). Pairs are split into
// chunks of similar estimated cost (pair_chunks.h) that workers take in turn,
// each with its own DtwWorkspace. Every value is computed the same way
// whatever the thread count, so the result is bit-identical for any
// `threads`.
//
// `progress`, if set, is called ONLY from the calling thread (which waits
// while the workers run): about every 0.5 s while work remains, then once
// with done_pairs == total_pairs when finished. It therefore needs no
// synchronisation of its own; it must not call back into this function.
CondensedMatrix ComputeDissimilarities(const FeatureStore& features, unsigned threads,
                                       const DissimilarityProgress& progress = {});

// Dissimilarity of one pair, as ComputeDissimilarities computes it (before
// the conversion to float). `workspace` is only used for ordered matrices.
double PairDissimilarity(const FeatureStore& features, uint32_t u, uint32_t v, DtwWorkspace& workspace);

// Total work of the all-pairs pass, for reporting: DP cells (sum over pairs
// of rows_u * rows_v) for ordered matrices, pairs * bins * buckets for
// histograms.
uint64_t DissimilarityWorkCells(const FeatureStore& features);

}  // namespace nodefl::server::fedwalk
