// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// CodebookStream: parses a streamed kCodebook artefact (every vertex's top-K
// alias table of Eq. 12, hct_format.h) and keeps the rows of the device's
// neighbours only, in a caller-provided entry pool. Row headers (8 bytes)
// and entries (12 bytes) straddle chunk boundaries anywhere
// (RecordAssembler); rows arrive in vertex order, so a cursor through the
// sorted neighbours finds the rows to keep.
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
#include "nodefl/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/record_assembler.h"

namespace nodefl::fedwalk {

class CodebookStream {
 public:
  // Starts a pass: every neighbour's codebook fields are cleared and the
  // pool is empty.
  void Begin(Span<HctNeighbour> neighbours, Span<CodebookEntry> pool, uint32_t vertex_count);
  // The piece at `offset` (in order, no gaps).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the digest matched:
  //   OK                  every neighbour's non-empty row is kept
  //   kDataLoss           malformed or short codebook: nothing is kept
  //   kResourceExhausted  the pool could not hold every neighbour row; the
  //                       rows that fit are kept
  Status Finish();

  uint32_t rows_kept() const { return rows_kept_; }
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
  size_t pool_used_ = 0;
  uint32_t rows_kept_ = 0;
  Part part_ = Part::kHeader;
  bool invalid_ = false;
  bool overflow_ = false;
};

}  // namespace nodefl::fedwalk
