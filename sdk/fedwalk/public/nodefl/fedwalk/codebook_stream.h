// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// CodebookStream: parses a streamed kCodebook artefact (every vertex's top-K
// alias table of Eq. 12, hct_format.h) and keeps the rows of the device's
// neighbours only, in a caller-provided entry pool. Row headers (8 bytes)
// and entries (12 bytes) straddle chunk boundaries anywhere
// (RecordAssembler); rows arrive in vertex order, so a cursor through the
// sorted neighbours finds the rows to keep.
//
// The device's own row is kept too (own_id): a walk that jumps to the
// device with the 2-hop predictor needs the device to encode itself
// (walk_format.h, kSelfEncodeFirst).
//
// Validation, all of it before an entry can reach the walk: the header's
// vertex count equals the job's and 1 <= K <= kMaxCodebookK, reserved fields
// are zero, every row has count <= K and a finite truncated mass, every
// entry names a vertex < vertex_count, accepts with at most kQ31One and
// aliases an entry of its own row. After the first violation the rest of the
// artefact is only consumed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/record_assembler.h"

namespace nodefl::fedwalk {

class CodebookStream {
 public:
  // Starts a pass: every neighbour's codebook fields are cleared, no own
  // row is held and the pool is empty. `own_id`: the device (kAbsentVertex:
  // keep no own row).
  void Begin(Span<HctNeighbour> neighbours, Span<CodebookEntry> pool, uint32_t vertex_count,
             uint32_t own_id = kAbsentVertex);
  // The piece at `offset` (in order, no gaps).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the digest matched:
  //   OK                  every neighbour's non-empty row is kept, and the
  //                       own row if non-empty
  //   kDataLoss           malformed or short codebook: nothing is kept
  //   kResourceExhausted  the pool could not hold every such row; the rows
  //                       that fit are kept
  Status Finish();

  // Neighbour rows kept (the own row is not counted).
  uint32_t rows_kept() const { return rows_kept_; }
  // The own row in the pool (empty if none was kept).
  Span<const CodebookEntry> own_row() const;
  // The probability mass the own row leaves out (0 without an own row).
  float own_truncated_mass() const { return own_count_ == 0 ? 0.0f : own_truncated_mass_; }
  size_t pool_used() const { return pool_used_; }
  uint32_t k() const { return k_; }

 private:
  enum class Part : uint8_t { kHeader, kRowHeader, kEntry, kDone };
  void Parse(const uint8_t* record);
  void ParseRowHeader(const uint8_t* record);
  void ParseEntry(const uint8_t* record);
  void NextRow();
  void DropKeptRows();

  RecordAssembler assembler_;
  Span<HctNeighbour> neighbours_;
  Span<CodebookEntry> pool_;
  uint32_t vertex_count_ = 0;
  uint32_t k_ = 0;
  uint32_t vertex_ = 0;      // the row being parsed
  uint32_t row_count_ = 0;   // its entries
  uint32_t entry_ = 0;       // next entry of the row
  size_t cursor_ = 0;        // first neighbour with id >= vertex_
  HctNeighbour* keeping_ = nullptr;  // neighbour whose row is being kept
  bool keeping_any_ = false;         // a row (a neighbour's or the own) is being kept
  size_t keep_offset_ = 0;           // its first entry in the pool
  uint32_t own_id_ = kAbsentVertex;
  size_t own_offset_ = 0;
  uint32_t own_count_ = 0;           // 0: no own row kept
  float own_truncated_mass_ = 0.0f;
  size_t pool_used_ = 0;
  uint32_t rows_kept_ = 0;
  Part part_ = Part::kHeader;
  bool invalid_ = false;
  bool overflow_ = false;
};

}  // namespace nodefl::fedwalk
