// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What a participant of a kCAGC job holds (kCAGC Sec. 3.1.2, the vertical
// setting): the whole graph and its own feature columns. An organisation
// builds this from its own data; the emulator and the tests build it from a
// dataset by splitting the columns among L participants exactly as the
// one-process runs do (server/kcagc/sim features.h: a seeded random
// permutation of the m columns cut into L near-equal contiguous chunks, the
// first m mod L one column longer, each chunk sorted), so that a job over
// TLS and `nodefl-kcagc-sim` with the same seed cluster the same slices.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/kcagc/types.h"

namespace nodefl::kcagc {

struct ParticipantData {
  uint32_t index = 0;         // l, its place among the participants (ascending device id)
  uint32_t participants = 0;  // L
  uint32_t num_nodes = 0;
  std::vector<uint64_t> offsets;     // CSR adjacency, as GraphView
  std::vector<uint32_t> neighbours;
  std::vector<uint32_t> columns;     // the dataset columns of the slice (ascending)
  Matrix slice;                      // num_nodes x columns.size(), unfiltered

  // Borrows this object's arrays.
  GraphView graph() const;
};

// L chunks of the column ids 0 .. columns - 1 (L <= columns; empty chunks
// otherwise), the split the one-process runs make with the same seed.
std::vector<std::vector<uint32_t>> SplitFeatureColumns(uint32_t columns, uint32_t participants, uint64_t seed);

// Participant `index` of `participants` from a dataset's CSR adjacency and
// sparse binary features (feature_offsets: num_nodes + 1 entries), holding
// columns `columns`. kInvalidArgument for shapes that do not match, an
// index out of range or no columns.
[[nodiscard]] Result<ParticipantData> MakeParticipantData(uint32_t num_nodes, Span<const uint64_t> offsets,
                                                          Span<const uint32_t> neighbours,
                                                          Span<const uint64_t> feature_offsets,
                                                          Span<const uint32_t> features,
                                                          std::vector<uint32_t> columns, uint32_t index,
                                                          uint32_t participants);

}  // namespace nodefl::kcagc
