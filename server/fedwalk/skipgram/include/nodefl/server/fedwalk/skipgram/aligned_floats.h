// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A float vector whose storage starts on a 64-byte cache line, so that each
// SkipGram row (a multiple of 16 floats, see skipgram_model.h) is exactly
// whole cache lines and the vectorised loops never split a load across two.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace nodefl::server::fedwalk {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: rebinding must be implicit

  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlignment); }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

}  // namespace nodefl::server::fedwalk
