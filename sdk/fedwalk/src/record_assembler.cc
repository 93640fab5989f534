// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/record_assembler.h"

#include <cstring>

#include "nodefl/core/assert.h"

namespace nodefl::fedwalk {

size_t RecordAssembler::Take(ConstByteSpan data, size_t record_bytes, const uint8_t** record) {
  NODEFL_CHECK(record != nullptr && record_bytes >= 1 && record_bytes <= kMaxRecordBytes &&
               held_ < record_bytes);
  *record = nullptr;
  if (held_ == 0 && data.size() >= record_bytes) {
    *record = data.data();  // whole in this piece: no copy
    return record_bytes;
  }
  const size_t want = record_bytes - held_;
  const size_t n = data.size() < want ? data.size() : want;
  if (n > 0) std::memcpy(carry_ + held_, data.data(), n);
  held_ += n;
  if (held_ == record_bytes) {
    held_ = 0;
    *record = carry_;
  }
  return n;
}

}  // namespace nodefl::fedwalk
