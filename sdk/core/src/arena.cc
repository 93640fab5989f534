// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/arena.h"

namespace nodefl {

Result<void*> Arena::AllocateBytes(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return Status::InvalidArgument();
  if (base_ == nullptr) return Status::ResourceExhausted();
  // Align the absolute address, not the offset: the caller's buffer need not
  // be aligned to anything.
  const uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
  const uintptr_t aligned = (start + (alignment - 1)) & ~static_cast<uintptr_t>(alignment - 1);
  const size_t padding = static_cast<size_t>(aligned - start);
  if (padding > remaining() || size > remaining() - padding) return Status::ResourceExhausted();
  used_ += padding + size;
  if (used_ > high_water_) high_water_ = used_;
  return static_cast<void*>(base_ + (aligned - reinterpret_cast<uintptr_t>(base_)));
}

void Arena::Rewind(Checkpoint cp) {
  NODEFL_CHECK(cp.offset <= used_);
  used_ = cp.offset;
}

}  // namespace nodefl
