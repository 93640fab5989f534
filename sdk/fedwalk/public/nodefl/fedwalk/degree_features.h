// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The structural features a FedWalk device computes from its neighbour list
// (FedWalk Sec. 4.2, Alg. 2): its per-bin neighbour
// counts c_v, the Eq. 5 order of its neighbours by estimated degree, and
// strict mode's replacement for the ordered degree matrix, a noised
// histogram of the neighbours' dictionary rows. Pure functions over
// caller-provided memory; hct_role.h puts them together.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"

namespace nodefl::fedwalk {

// ---- Binning (Alg. 2 line 15) -------------------------------------------------

// ++counts[bin] for one neighbour; kAbsentBin (a neighbour outside the job)
// is ignored. kInvalidArgument (counts unchanged) for any other bin >=
// counts.size().
Status AddNeighbourToBinCounts(uint8_t bin, Span<uint32_t> counts);

// counts[i] = number of entries of `neighbour_bins` equal to i, for i <
// bins; kAbsentBin entries are ignored. kInvalidArgument if counts.size() !=
// bins or an entry is neither < bins nor kAbsentBin (counts are then
// unspecified).
Status CountNeighboursPerBin(Span<const uint8_t> neighbour_bins, uint32_t bins, Span<uint32_t> counts);

// ---- Dictionary rows --------------------------------------------------------------
// A row is one vertex's noised degree vector as the dictionary carries it:
// bins x little-endian f32.

// True if every value of the row is finite. The dictionary marks a vertex
// without a degree vector with NaN; an infinite value is no degree estimate
// either, so such rows are treated as absent too.
bool IsFiniteRow(ConstByteSpan row);

// The vertex's estimated degree: the sum of its noised bin counts (Sec. 4.2:
// "the sum of vector elements is the noised degree value"). Summed in double,
// in bin order, so every party computing it gets the same number.
double EstimatedDegree(ConstByteSpan row);

// ---- Eq. 5 order ----------------------------------------------------------------

// A neighbour as Eq. 5 orders it: ascending estimated degree, ties broken by
// vertex id so that the order is a function of public data only.
struct DegreeKey {
  double degree = 0.0;
  uint32_t id = 0;
};

constexpr bool DegreeKeyLess(const DegreeKey& a, const DegreeKey& b) {
  return a.degree < b.degree || (a.degree == b.degree && a.id < b.id);
}

// In-place heap sort of the positions 0 .. n-1 of some caller-owned sequence:
// less(i, j) compares the elements now at positions i and j, swap(i, j)
// exchanges them. O(n log n) comparisons, no memory, no recursion: a device
// with thousands of neighbours can neither afford insertion sort's n^2 nor a
// merge sort's buffer. Not stable; callers make keys unique (DegreeKey does).
template <typename Less, typename Swap>
void HeapSortPositions(size_t n, Less&& less, Swap&& swap) {
  if (n < 2) return;
  // Restores the max-heap property below `root` within positions [0, end).
  auto sift_down = [&](size_t root, size_t end) {
    for (;;) {
      size_t child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && less(child, child + 1)) ++child;
      if (!less(root, child)) return;
      swap(root, child);
      root = child;
    }
  };
  for (size_t i = n / 2; i-- > 0;) sift_down(i, n);
  for (size_t end = n - 1; end > 0; --end) {
    swap(0, end);  // the largest of [0, end] goes to its final place
    sift_down(0, end);
  }
}

// Sorts `keys` into Eq. 5 order (DegreeKeyLess). NaN degrees are not
// allowed (absent neighbours are dropped before ordering).
void SortByEstimatedDegree(Span<DegreeKey> keys);

// ---- Strict-mode degree histogram -------------------------------------------------
// H_v[i][b] = number of v's neighbours u (present in the dictionary) whose
// noised count c_u[i] falls in HistogramBucket(c_u[i], buckets)
// (hct_format.h); bins x buckets cells, row-major, as kDegreeHistogram
// uploads it. Unlike the paper's M_v, whose rows are public dictionary
// entries (so the server can match them and recover the neighbour set), the
// histogram is a count query and can be noised.

// Adds one neighbour's row (bins x f32) to `histogram` (bins x buckets).
// kInvalidArgument for a row of the wrong size, bins or buckets out of
// range (hct_format.h limits), or a histogram of the wrong size.
Status AddRowToDegreeHistogram(ConstByteSpan row, uint32_t bins, uint32_t buckets,
                               Span<int32_t> histogram);

// The histogram of `rows` (m rows of bins x f32, back to back; callers pass
// only present neighbours' rows): zeroes `out`, then adds every row.
Status BuildDegreeHistogram(ConstByteSpan rows, uint32_t bins, uint32_t buckets, Span<int32_t> out);

// Noises the histogram in place for an epsilon-DP release (edge-level, for
// this device's release, the dictionary being public):
// cells[j] += exact discrete Laplace noise with t = bins / epsilon (rounded
// up to a rational, discrete_laplace.h), independently per cell.
//
// Sensitivity. Neighbouring inputs differ in one edge (v, u), i.e. in
// whether u's row is counted. A row adds exactly 1 to exactly one bucket in
// each of the k bins (HistogramBucket maps each value to one bucket) and
// nothing elsewhere, so adding or removing u changes k cells by exactly 1:
// the L1 sensitivity is k = bins. (u's own row is u's earlier release and
// public here; a neighbour missing from the dictionary changes nothing.)
//
// `cells.size()` must be a non-zero multiple of `bins`. Results saturate at
// the int32 range (post-processing). *epsilon_spent = the delivered
// epsilon' = DiscreteLaplaceEpsilon(scale, bins) <= epsilon. Errors (cells
// zeroed, *epsilon_spent = 0 when non-null, nothing to release):
// kInvalidArgument for bad sizes, a null epsilon_spent, or an epsilon the
// discrete scale rejects; the DRBG's error if it failed.
Status NoiseHistogram(Drbg& rng, double epsilon, uint32_t bins, Span<int32_t> cells,
                      double* epsilon_spent);

}  // namespace nodefl::fedwalk
