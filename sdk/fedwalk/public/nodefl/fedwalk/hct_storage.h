// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The memory a device gives the FedWalk HCT job (hct_role.h): one record per
// neighbour plus optional buffers. Everything the job learns about the graph
// beyond the device's own neighbour list is public (bin plan, dictionary,
// tree, codebook); the device keeps only the parts about its neighbours,
// which the later walk phase needs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::fedwalk {

// One neighbour (about 96 bytes). The app fills in `id`; the job fills in
// the rest and resets it at the start of every job.
struct HctNeighbour {
  uint32_t id = 0;
  uint8_t bin = kAbsentBin;      // from the bin plan (kAbsentBin: not in the job)
  bool in_dictionary = false;    // its dictionary row is a degree estimate (no NaN)
  bool has_codebook_row = false;  // its codebook row is kept in the pool
  uint16_t codebook_count = 0;   // entries of that row
  uint8_t row_bytes[4 * kMaxBins] = {};  // its dictionary row as received (bins x LE f32)
  uint32_t codebook_offset = 0;  // first entry of its row in HctStorage::codebook_pool
  float truncated_mass = 0.0f;   // probability mass its top-K row leaves out
  // Scratch for the Eq. 5 order, striped across the records so that it
  // needs no array of its own: for r < present neighbours, neighbours[r].
  // order_slot is the index of the r-th neighbour in ascending degree order.
  uint32_t order_slot = 0;
  double estimated_degree = 0.0;  // EstimatedDegree(row) when in_dictionary
};

struct HctStorage {
  // The device's neighbours: ids sorted ascending, no duplicates, not the
  // device's own id. Its size is the device's capacity (see
  // FedWalkHctRole::Init for a degree above it).
  Span<HctNeighbour> neighbours;
  // Codebook rows of the neighbours and of the device itself: (deg + 1) x
  // K entries always suffice (K = HctParameters::codebook_k). Too small:
  // round 3 reports kResourceExhausted and keeps the rows that fit.
  Span<CodebookEntry> codebook_pool;
  // Optional: the published tree (kTree artefact) is kept here if it fits,
  // otherwise only verified.
  Span<uint8_t> tree;
  // Optional: the whole bin plan (vertex_count bytes) is kept here if it
  // fits (the walk's 2-hop predictor needs it later), otherwise only the
  // neighbours' bins.
  Span<uint8_t> bin_plan;
};

}  // namespace nodefl::fedwalk
