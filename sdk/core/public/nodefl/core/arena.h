// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Arena: a bump allocator over one caller-owned buffer, in the style of a
// micro-controller inference runtime's tensor arena. The device gets all of its
// working memory from here, so the app sizes (and can measure) the device's
// footprint once. Nothing is freed individually; a Checkpoint lets a phase
// release its scratch memory in one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl {

class Arena {
 public:
  struct Checkpoint {
    size_t offset;
  };

  Arena() = default;
  explicit Arena(Span<uint8_t> buffer) : base_(buffer.data()), capacity_(buffer.size()) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `alignment` must be a power of two. Zero-size requests succeed and return
  // a non-null pointer inside (or one past) the buffer.
  Result<void*> AllocateBytes(size_t size, size_t alignment);

  // `count` value-initialised objects of T.
  template <typename T>
  Result<Span<T>> Allocate(size_t count) {
    static_assert(std::is_trivially_destructible_v<T>,
                  "arena memory is never destroyed element by element");
    if (count > SIZE_MAX / sizeof(T)) return Status::ResourceExhausted();
    Result<void*> raw = AllocateBytes(count * sizeof(T), alignof(T));
    if (!raw.ok()) return raw.status();
    T* items = static_cast<T*>(raw.value());
    for (size_t i = 0; i < count; ++i) ::new (static_cast<void*>(items + i)) T();
    return Span<T>(items, count);
  }

  Checkpoint checkpoint() const { return Checkpoint{used_}; }
  // Releases everything allocated after `cp`. Spans handed out since then
  // must no longer be used.
  void Rewind(Checkpoint cp);
  void Reset() { used_ = 0; }

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t remaining() const { return capacity_ - used_; }
  // Largest `used()` ever reached: what a port should size the buffer to.
  size_t high_water_mark() const { return high_water_; }

 private:
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  size_t high_water_ = 0;
};

}  // namespace nodefl
