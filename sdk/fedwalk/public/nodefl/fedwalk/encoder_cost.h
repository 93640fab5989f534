// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the walk encoder (FedWalk Eq. 12, codebook rows) costs, as the
// device itself can check it from the rows it samples from: its own row
// and its walk neighbours' rows, as the server sent them (top-K alias
// tables with Q31 acceptances, codebook_stream.h).
//
// Each encoding replaces a vertex by a draw from that vertex's row, so what
// an encoding hides is which of the rows it came from. Over the rows the
// device holds it computes, exactly from the integer alias tables:
//   * the common outputs C: vertices present in every row;
//   * epsilon = max over o in C of log(max_r p_r(o) / min_r p_r(o));
//   * delta = max over rows r of p_r(outside C), the probability of an
//     output some other row can never produce (a likelihood ratio without
//     bound), so that any two rows a, b satisfy
//     P_a(S) <= e^epsilon P_b(S) + delta for every set S of outputs;
//   * unbounded when C is empty (delta = 1: the rows tell the vertices apart
//     outright, e.g. paper-mode rows that mostly return the vertex itself).
// The walk role records the larger of this and the server's figure
// (WalkParameters::epsilon_per_encoding), with the rows' truncated masses
// (what the top-K rows leave out of Eq. 12) added to delta: a server that
// understates the encoder's cost is caught for every pair of rows a device
// holds. It is a lower bound on the cost over all pairs of vertices, which
// only the server can compute (and reports).
//
// Cost: O(c_min x sum over rows of c_r^2) time with c_min the smallest row
// and c_r a row's size (each lookup scans the row and its aliases), no
// memory beyond the rows. Paper-mode rows hold one to a few entries; full
// rows of K = 256 make this seconds for a hub of thousands of neighbours,
// once per job.
#pragma once

#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"

namespace nodefl::fedwalk {

struct EncoderCost {
  double epsilon = 0.0;
  double delta = 0.0;           // from the rows' supports (not the truncated masses)
  double truncated_mass = 0.0;  // the largest truncated mass among the rows
  bool unbounded = false;
  uint32_t rows = 0;            // rows compared
};

// The rows are `own_row` (may be empty) and the codebook row of each
// neighbour with has_codebook_row (entries in `pool`). kDataLoss for a row
// that is not a valid alias table (acceptance above 2^31, alias out of
// range, a row outside the pool).
Result<EncoderCost> MeasureEncoderRows(Span<const CodebookEntry> own_row, float own_truncated_mass,
                                       Span<const HctNeighbour> neighbours, Span<const CodebookEntry> pool);

}  // namespace nodefl::fedwalk
