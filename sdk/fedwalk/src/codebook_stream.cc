// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/codebook_stream.h"

#include <cmath>

#include "nodefl/core/little_endian.h"

namespace nodefl::fedwalk {

void CodebookStream::Begin(Span<HctNeighbour> neighbours, Span<CodebookEntry> pool,
                           uint32_t vertex_count, uint32_t own_id) {
  assembler_.Reset();
  neighbours_ = neighbours;
  pool_ = pool;
  vertex_count_ = vertex_count;
  k_ = 0;
  vertex_ = 0;
  row_count_ = 0;
  entry_ = 0;
  cursor_ = 0;
  keeping_ = nullptr;
  keeping_any_ = false;
  keep_offset_ = 0;
  own_id_ = own_id;
  own_offset_ = 0;
  own_count_ = 0;
  own_truncated_mass_ = 0.0f;
  pool_used_ = 0;
  rows_kept_ = 0;
  part_ = Part::kHeader;
  invalid_ = false;
  overflow_ = false;
  for (HctNeighbour& n : neighbours_) {
    n.has_codebook_row = false;
    n.codebook_offset = 0;
    n.codebook_count = 0;
    n.truncated_mass = 0.0f;
  }
}

Span<const CodebookEntry> CodebookStream::own_row() const {
  if (own_count_ == 0) return {};
  return Span<const CodebookEntry>(pool_).subspan(own_offset_, own_count_);
}

void CodebookStream::NextRow() {
  if (keeping_ != nullptr) {
    keeping_->has_codebook_row = true;
    ++rows_kept_;
    keeping_ = nullptr;
  }
  keeping_any_ = false;
  ++vertex_;
  part_ = vertex_ == vertex_count_ ? Part::kDone : Part::kRowHeader;
}

void CodebookStream::ParseRowHeader(const uint8_t* record) {
  row_count_ = LoadU16Le(record);
  const float mass = LoadF32Le(record + 4);
  if (row_count_ > k_ || LoadU16Le(record + 2) != 0 || !std::isfinite(mass)) {
    invalid_ = true;
    return;
  }
  entry_ = 0;
  while (cursor_ < neighbours_.size() && neighbours_[cursor_].id < vertex_) ++cursor_;
  const bool neighbour = cursor_ < neighbours_.size() && neighbours_[cursor_].id == vertex_;
  const bool own = vertex_ == own_id_;
  if ((neighbour || own) && row_count_ > 0) {
    if (pool_.size() - pool_used_ >= row_count_) {
      keeping_any_ = true;
      keep_offset_ = pool_used_;
      if (own) {
        // The own row is complete only once NextRow runs; until then
        // own_count_ stays 0 so a cut-short artefact leaves no half row.
        own_offset_ = pool_used_;
        own_truncated_mass_ = mass;
      } else {
        keeping_ = &neighbours_[cursor_];
        keeping_->codebook_offset = static_cast<uint32_t>(pool_used_);
        keeping_->codebook_count = static_cast<uint16_t>(row_count_);
        keeping_->truncated_mass = mass;
      }
      pool_used_ += row_count_;
    } else {
      overflow_ = true;  // skip this row, keep parsing (a later one may fit)
    }
  }
  if (row_count_ == 0) {
    NextRow();
  } else {
    part_ = Part::kEntry;
  }
}

void CodebookStream::ParseEntry(const uint8_t* record) {
  CodebookEntry e;
  e.vertex = LoadU32Le(record);
  e.accept_q31 = LoadU32Le(record + 4);
  e.alias = LoadU32Le(record + 8);
  if (e.vertex >= vertex_count_ || e.accept_q31 > kQ31One || e.alias >= row_count_) {
    invalid_ = true;
    return;
  }
  if (keeping_any_) pool_[keep_offset_ + entry_] = e;
  if (++entry_ == row_count_) {
    if (keeping_any_ && keeping_ == nullptr) own_count_ = row_count_;
    NextRow();
  }
}

void CodebookStream::Parse(const uint8_t* record) {
  switch (part_) {
    case Part::kHeader:
      k_ = LoadU16Le(record + 4);
      if (LoadU32Le(record) != vertex_count_ || vertex_count_ == 0 || k_ < 1 || k_ > kMaxCodebookK ||
          LoadU16Le(record + 6) != 0) {
        invalid_ = true;
        return;
      }
      part_ = Part::kRowHeader;
      return;
    case Part::kRowHeader:
      ParseRowHeader(record);
      return;
    case Part::kEntry:
      ParseEntry(record);
      return;
    case Part::kDone:
      invalid_ = true;  // bytes beyond the last row
      return;
  }
}

void CodebookStream::Feed(uint64_t /*offset*/, ConstByteSpan data) {
  // Offsets only grow without gaps (protocol::ChunkReceiver): the parser's
  // position is all it needs.
  while (!data.empty() && !invalid_) {
    size_t record_bytes = 1;
    switch (part_) {
      case Part::kHeader: record_bytes = kCodebookHeaderBytes; break;
      case Part::kRowHeader: record_bytes = kCodebookRowHeaderBytes; break;
      case Part::kEntry: record_bytes = kCodebookEntryBytes; break;
      case Part::kDone: record_bytes = 1; break;
    }
    const uint8_t* record = nullptr;
    data = data.subspan(assembler_.Take(data, record_bytes, &record));
    if (record != nullptr) Parse(record);
  }
}

void CodebookStream::DropKeptRows() {
  for (HctNeighbour& n : neighbours_) {
    n.has_codebook_row = false;
    n.codebook_offset = 0;
    n.codebook_count = 0;
    n.truncated_mass = 0.0f;
  }
  keeping_ = nullptr;
  keeping_any_ = false;
  own_count_ = 0;
  pool_used_ = 0;
  rows_kept_ = 0;
}

Status CodebookStream::Finish() {
  if (invalid_ || part_ != Part::kDone || assembler_.held() != 0) {
    // A codebook that is wrong anywhere is trusted nowhere.
    DropKeptRows();
    return Status::DataLoss();
  }
  return overflow_ ? Status::ResourceExhausted() : Status::Ok();
}

}  // namespace nodefl::fedwalk
