// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/tree_stream.h"

#include <cmath>
#include <cstring>

#include "nodefl/core/assert.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::fedwalk {

void TreeStream::Begin(uint64_t total_bytes, uint32_t vertex_count, ByteSpan keep) {
  assembler_.Reset();
  keep_ = keep;
  keep_whole_ = keep.size() >= total_bytes;
  total_bytes_ = total_bytes;
  seen_ = 0;
  vertex_count_ = vertex_count;
  leaves_ = 0;
  index_ = 0;
  last_height_ = 0.0f;
  part_ = Part::kHeader;
  invalid_ = false;
}

void TreeStream::Parse(const uint8_t* record) {
  switch (part_) {
    case Part::kHeader:
      leaves_ = LoadU32Le(record);
      // The announced size must be exactly what this leaf count needs.
      if (leaves_ > vertex_count_ || total_bytes_ != TreeArtefactBytes(leaves_)) {
        invalid_ = true;
        return;
      }
      index_ = 0;
      part_ = leaves_ == 0 ? Part::kDone : Part::kLeaves;
      return;
    case Part::kLeaves:
      if (LoadU32Le(record) >= vertex_count_) {
        invalid_ = true;
        return;
      }
      if (++index_ == leaves_) {
        index_ = 0;
        part_ = leaves_ == 1 ? Part::kDone : Part::kMerges;
      }
      return;
    case Part::kMerges: {
      // Node ids below leaves_ + index_ exist by the time merge index_ runs.
      const uint64_t existing = uint64_t{leaves_} + index_;
      const uint32_t a = LoadU32Le(record);
      const uint32_t b = LoadU32Le(record + 4);
      const float height = LoadF32Le(record + 8);
      if (a >= existing || b >= existing || a == b || !std::isfinite(height) ||
          (index_ > 0 && height < last_height_)) {
        invalid_ = true;
        return;
      }
      last_height_ = height;
      if (++index_ == leaves_ - 1) part_ = Part::kDone;
      return;
    }
    case Part::kDone:
      invalid_ = true;  // bytes beyond the tree
      return;
  }
}

void TreeStream::Feed(uint64_t offset, ConstByteSpan data) {
  NODEFL_CHECK(offset == seen_);
  if (keep_whole_ && offset + data.size() <= keep_.size()) {
    std::memcpy(keep_.data() + offset, data.data(), data.size());
  }
  seen_ += data.size();
  while (!data.empty() && !invalid_) {
    const size_t record_bytes =
        part_ == Part::kMerges ? kTreeMergeBytes : (part_ == Part::kDone ? 1 : 4);
    const uint8_t* record = nullptr;
    data = data.subspan(assembler_.Take(data, record_bytes, &record));
    if (record != nullptr) Parse(record);
  }
}

Status TreeStream::Finish() const {
  const bool whole = seen_ == total_bytes_ && part_ == Part::kDone && assembler_.held() == 0;
  return (!invalid_ && whole) ? Status::Ok() : Status::DataLoss();
}

}  // namespace nodefl::fedwalk
