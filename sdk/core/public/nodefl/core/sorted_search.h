// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Binary search over a span sorted by a key, for the tables roles keep
// sorted by device id (neighbours, peers). Written out rather than taken
// from <algorithm>: sdk/core uses only the compiler's freestanding headers,
// which do not include <algorithm>.
#pragma once

#include <cstddef>

#include "nodefl/core/span.h"

namespace nodefl {

// Index of the first element e of `items` with !(key_of(e) < key), or
// items.size() if there is none: std::lower_bound with a key projection.
// `items` must be sorted by key_of (duplicates allowed); key_of(e) and
// `key` need only compare with <.
template <typename T, typename Key, typename KeyOf>
constexpr size_t LowerBound(Span<T> items, const Key& key, KeyOf key_of) {
  size_t lo = 0;
  size_t hi = items.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;  // (lo + hi) / 2 could overflow
    if (key_of(items[mid]) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The first element whose key equals `key`, or nullptr: a lookup in a
// sorted table. Same preconditions as LowerBound, plus ==.
template <typename T, typename Key, typename KeyOf>
constexpr T* FindSorted(Span<T> items, const Key& key, KeyOf key_of) {
  const size_t i = LowerBound(items, key, key_of);
  return (i < items.size() && key_of(items[i]) == key) ? &items[i] : nullptr;
}

}  // namespace nodefl
