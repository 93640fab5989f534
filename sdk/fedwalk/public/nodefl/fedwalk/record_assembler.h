// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RecordAssembler: reads fixed-size records (a tree merge, a codebook entry,
// a row header) out of a chunked artefact whose chunk boundaries fall
// anywhere, even inside a record. Records are handed out in place when a
// piece holds them whole, and through a small carry buffer when they
// straddle two (or more) pieces, so a parser never needs the artefact in
// memory.
//
//   while (!piece.empty()) {
//     const uint8_t* record = nullptr;
//     piece = piece.subspan(assembler.Take(piece, kRecordBytes, &record));
//     if (record != nullptr) Parse(record);   // valid until the next Take
//   }
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"

namespace nodefl::fedwalk {

class RecordAssembler {
 public:
  static constexpr size_t kMaxRecordBytes = 16;

  // Consumes bytes of `data` towards a record of `record_bytes` (1 ..
  // kMaxRecordBytes; the same size until that record is complete) and
  // returns how many it consumed. `*record` is the complete record, or
  // nullptr when `data` ran out first (the bytes are carried over).
  size_t Take(ConstByteSpan data, size_t record_bytes, const uint8_t** record);

  // Drops a partly assembled record.
  void Reset() { held_ = 0; }
  size_t held() const { return held_; }

 private:
  uint8_t carry_[kMaxRecordBytes] = {};
  size_t held_ = 0;
};

}  // namespace nodefl::fedwalk
