// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Span<T>: a non-owning view over caller memory (C++17 has no std::span).
// Every SDK API that touches a buffer takes a Span, so the caller decides
// where memory lives: a static array on a microcontroller, an arena, or a
// std::vector in an app or test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "nodefl/core/assert.h"

namespace nodefl {

template <typename T>
class Span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = size_t;
  using iterator = T*;

  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}  // NOLINT

  // Span<const T> from Span<T>.
  template <typename U,
            typename = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr Span(const Span<U>& other)  // NOLINT
      : data_(other.data()), size_(other.size()) {}

  // Any contiguous container with data()/size() (std::array, std::vector in
  // host code and tests).
  template <typename Container,
            typename = std::enable_if_t<
                !std::is_same_v<std::remove_cv_t<std::remove_reference_t<Container>>, Span> &&
                std::is_convertible_v<
                    std::remove_pointer_t<decltype(std::declval<Container&>().data())> (*)[],
                    T (*)[]>>>
  constexpr Span(Container& container)  // NOLINT
      : data_(container.data()), size_(container.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr size_t size_bytes() const { return size_ * sizeof(T); }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

  constexpr T& operator[](size_t i) const {
    NODEFL_CHECK(i < size_);
    return data_[i];
  }
  constexpr T& front() const { return (*this)[0]; }
  constexpr T& back() const { return (*this)[size_ - 1]; }

  constexpr Span first(size_t count) const {
    NODEFL_CHECK(count <= size_);
    return Span(data_, count);
  }
  constexpr Span last(size_t count) const {
    NODEFL_CHECK(count <= size_);
    return Span(data_ + (size_ - count), count);
  }
  constexpr Span subspan(size_t offset, size_t count) const {
    NODEFL_CHECK(offset <= size_ && count <= size_ - offset);
    return Span(data_ + offset, count);
  }
  constexpr Span subspan(size_t offset) const {
    NODEFL_CHECK(offset <= size_);
    return Span(data_ + offset, size_ - offset);
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

using ByteSpan = Span<uint8_t>;
using ConstByteSpan = Span<const uint8_t>;

template <typename T>
Span<const uint8_t> AsBytes(Span<T> s) {
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size_bytes());
}

}  // namespace nodefl
