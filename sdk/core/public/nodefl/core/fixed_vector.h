// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Fixed-capacity sequence containers. FixedVector<T> is a vector-like view over
// caller storage (a static array, an arena slice); InlineVector<T, N> carries
// its storage inline. Neither ever allocates: growing past capacity returns
// kResourceExhausted and leaves the contents unchanged.
//
// Elements must be trivially destructible: the device core keeps plain data
// (ids, counts, floats) in these, and it keeps clear()/resize() O(1).
#pragma once

#include <cstddef>
#include <type_traits>

#include "nodefl/core/assert.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl {

template <typename T>
class FixedVector {
  static_assert(std::is_trivially_destructible_v<T>,
                "FixedVector holds trivially destructible elements only");

 public:
  FixedVector() = default;
  explicit FixedVector(Span<T> storage) : data_(storage.data()), capacity_(storage.size()) {}
  FixedVector(const FixedVector&) = delete;
  FixedVector& operator=(const FixedVector&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == capacity_; }

  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  T& operator[](size_t i) {
    NODEFL_CHECK(i < size_);
    return data_[i];
  }
  const T& operator[](size_t i) const {
    NODEFL_CHECK(i < size_);
    return data_[i];
  }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  Status push_back(const T& value) {
    if (size_ == capacity_) return Status::ResourceExhausted();
    data_[size_++] = value;
    return Status::Ok();
  }
  void pop_back() {
    NODEFL_CHECK(size_ > 0);
    --size_;
  }
  // Grows with value-initialised elements or shrinks.
  Status resize(size_t new_size) {
    if (new_size > capacity_) return Status::ResourceExhausted();
    for (size_t i = size_; i < new_size; ++i) data_[i] = T();
    size_ = new_size;
    return Status::Ok();
  }
  void clear() { size_ = 0; }

  Span<T> span() { return Span<T>(data_, size_); }
  Span<const T> span() const { return Span<const T>(data_, size_); }

 protected:
  void Rebind(T* data, size_t capacity) {
    data_ = data;
    capacity_ = capacity;
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

template <typename T, size_t N>
class InlineVector : public FixedVector<T> {
 public:
  InlineVector() { this->Rebind(storage_, N); }
  InlineVector(const InlineVector& other) : InlineVector() { CopyFrom(other); }
  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) CopyFrom(other);
    return *this;
  }

 private:
  void CopyFrom(const InlineVector& other) {
    this->clear();
    for (const T& v : other) this->push_back(v).IgnoreError();  // same capacity: cannot fail
  }

  T storage_[N] = {};
};

}  // namespace nodefl
