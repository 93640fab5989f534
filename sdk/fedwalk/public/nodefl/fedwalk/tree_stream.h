// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TreeStream: checks a streamed kTree artefact (the published hierarchical
// clustering tree, hct_format.h) and keeps a copy if the device gave room
// for it. The checks need no memory beyond a record: the size matches the
// leaf count, leaves are vertex ids, every merge joins two distinct nodes
// that already exist, and heights are finite and non-decreasing. (That each
// node is merged at most once would take a bitmap over 2m nodes; the walk
// phase that reads the tree re-checks what it relies on.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/fedwalk/record_assembler.h"

namespace nodefl::fedwalk {

class TreeStream {
 public:
  // Starts a pass over an artefact announced as `total_bytes`. `keep` is
  // used only if it holds all of them.
  void Begin(uint64_t total_bytes, uint32_t vertex_count, ByteSpan keep);
  // The piece at `offset` (in order, no gaps).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the last piece: OK, or kDataLoss for a malformed tree.
  Status Finish() const;

  bool kept() const { return keep_whole_ && Finish().ok(); }
  uint32_t leaves() const { return leaves_; }

 private:
  enum class Part : uint8_t { kHeader, kLeaves, kMerges, kDone };
  void Parse(const uint8_t* record);

  RecordAssembler assembler_;
  ByteSpan keep_;
  uint64_t total_bytes_ = 0;
  uint64_t seen_ = 0;
  uint32_t vertex_count_ = 0;
  uint32_t leaves_ = 0;
  uint32_t index_ = 0;  // within the current part
  float last_height_ = 0.0f;
  Part part_ = Part::kHeader;
  bool keep_whole_ = false;
  bool invalid_ = false;
};

}  // namespace nodefl::fedwalk
