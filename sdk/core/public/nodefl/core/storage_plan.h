// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sizing a device from the SDK alone. Every role offers two functions over
// its own sizing struct (neighbours, slots, ... : what the app decides):
//
//   Plan(sizing)         -> StoragePlan: the bytes and alignment it needs
//   Carve(arena, sizing) -> the storage the role is constructed with, taken
//                           from `arena`: exactly plan.bytes() once the
//                           arena is aligned to plan.alignment()
//
// An app adds its roles' plans (Then), gives one Arena of ArenaBytes(), and
// carves each role from it. Plan and Carve list the same pieces in the same
// order; ArenaCarve checks at the end that they agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "nodefl/core/arena.h"
#include "nodefl/core/assert.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl {

// Bytes laid out from an address aligned to `alignment()`, piece after
// piece, each at its own alignment. Sizes that overflow size_t fail with
// kResourceExhausted (no device has that much memory).
class StoragePlan {
 public:
  // `count` objects of T.
  template <typename T>
  [[nodiscard]] Status Add(size_t count) {
    if (count > SIZE_MAX / sizeof(T)) return Status::ResourceExhausted();
    return AddBytes(count * sizeof(T), alignof(T));
  }
  // `size` bytes at `alignment` (a power of two).
  [[nodiscard]] Status AddBytes(size_t size, size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return Status::InvalidArgument();
    const size_t padding = (alignment - bytes_ % alignment) % alignment;
    if (bytes_ > SIZE_MAX - padding || size > SIZE_MAX - padding - bytes_) return Status::ResourceExhausted();
    bytes_ += padding + size;
    if (alignment > alignment_) alignment_ = alignment;
    return Status::Ok();
  }
  // Appends `next` as one block, as carving it after this plan's pieces
  // does: the sum of a device's role plans.
  [[nodiscard]] Status Then(const StoragePlan& next) { return AddBytes(next.bytes_, next.alignment_); }

  size_t bytes() const { return bytes_; }
  size_t alignment() const { return alignment_; }
  // What an arena must have left for this plan wherever its next free byte
  // is: the plan plus the worst-case padding to its alignment.
  size_t ArenaBytes() const { return bytes_ > SIZE_MAX - (alignment_ - 1) ? SIZE_MAX : bytes_ + alignment_ - 1; }

 private:
  size_t bytes_ = 0;
  size_t alignment_ = 1;
};

// Objects that need their destructor run (they wipe keys or free MbedTLS
// state), constructed in arena memory. Destroys them, in reverse order,
// when it goes; the arena memory itself is the arena owner's. Move-only.
template <typename T>
class ArenaObjects {
 public:
  ArenaObjects() = default;
  ArenaObjects(const ArenaObjects&) = delete;
  ArenaObjects& operator=(const ArenaObjects&) = delete;
  ArenaObjects(ArenaObjects&& other) noexcept : items_(other.items_) { other.items_ = Span<T>(); }
  ArenaObjects& operator=(ArenaObjects&& other) noexcept {
    if (this != &other) {
      Destroy();
      items_ = other.items_;
      other.items_ = Span<T>();
    }
    return *this;
  }
  ~ArenaObjects() { Destroy(); }

  Span<T> span() const { return items_; }
  size_t size() const { return items_.size(); }
  T& operator[](size_t i) const { return items_[i]; }

  // Default-constructs `count` objects at `memory` (room and alignment for
  // them); this must be empty.
  void ConstructAt(void* memory, size_t count) {
    NODEFL_CHECK(items_.empty());
    T* items = static_cast<T*>(memory);
    for (size_t i = 0; i < count; ++i) ::new (static_cast<void*>(items + i)) T();
    items_ = Span<T>(items, count);
  }

 private:
  void Destroy() {
    for (size_t i = items_.size(); i > 0; --i) items_[i - 1].~T();
    items_ = Span<T>();
  }

  Span<T> items_;
};

// Takes one plan's pieces from an arena. Checks up front that the whole
// plan fits, so that a too-small arena fails with kResourceExhausted and is
// left as it was; rewinds whatever it took unless Finish() succeeded.
//
//   ArenaCarve carve(arena, plan);
//   NODEFL_TRY(carve.status());
//   NODEFL_TRY(carve.Take(storage.neighbours, n));   // trivially destructible
//   NODEFL_TRY(carve.Construct(owned.peers, n));     // needs destructors
//   NODEFL_TRY(carve.Finish());
class ArenaCarve {
 public:
  ArenaCarve(Arena& arena, const StoragePlan& plan) : arena_(arena), plan_(plan), start_(arena.checkpoint()) {
    // Align first: from an aligned start the pieces' padding is exactly
    // the plan's.
    Result<void*> aligned = arena_.AllocateBytes(0, plan_.alignment());
    if (!aligned.ok() || arena_.remaining() < plan_.bytes()) {
      arena_.Rewind(start_);
      status_ = Status::ResourceExhausted();
      return;
    }
    first_ = arena_.used();
  }
  ArenaCarve(const ArenaCarve&) = delete;
  ArenaCarve& operator=(const ArenaCarve&) = delete;
  ~ArenaCarve() {
    if (!finished_) arena_.Rewind(start_);
  }

  // kResourceExhausted: the arena cannot hold the plan.
  Status status() const { return status_; }

  // `count` value-initialised objects of a trivially destructible T.
  template <typename T>
  [[nodiscard]] Status Take(Span<T>& out, size_t count) {
    NODEFL_TRY(status_);
    Result<Span<T>> items = arena_.Allocate<T>(count);
    if (!items.ok()) return items.status();
    out = *items;
    return Status::Ok();
  }

  // `count` default-constructed objects owned by `out`.
  template <typename T>
  [[nodiscard]] Status Construct(ArenaObjects<T>& out, size_t count) {
    NODEFL_TRY(status_);
    if (count > SIZE_MAX / sizeof(T)) return Status::ResourceExhausted();
    Result<void*> raw = arena_.AllocateBytes(count * sizeof(T), alignof(T));
    if (!raw.ok()) return raw.status();
    out.ConstructAt(*raw, count);
    return Status::Ok();
  }

  // Everything planned was taken. A role whose Carve took other than its
  // Plan said has a bug: that is a check, not a Status.
  [[nodiscard]] Status Finish() {
    NODEFL_TRY(status_);
    NODEFL_CHECK(arena_.used() - first_ == plan_.bytes());
    finished_ = true;
    return Status::Ok();
  }

 private:
  Arena& arena_;
  const StoragePlan plan_;
  const Arena::Checkpoint start_;
  size_t first_ = 0;
  Status status_;
  bool finished_ = false;
};

}  // namespace nodefl
