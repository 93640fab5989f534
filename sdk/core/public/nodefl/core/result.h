// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Result<T>: a T or the Status that explains why there is none. Stored in
// place (no heap); reading the value of a failed Result is a programming
// error and panics rather than returning garbage.
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "nodefl/core/assert.h"
#include "nodefl/core/status.h"

namespace nodefl {

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "use Status directly");

 public:
  // A failed Result. Passing Status::Ok() here is a bug: it becomes kInternal
  // so that a value is never read from uninitialised storage.
  constexpr Result(Status status)  // NOLINT(google-explicit-constructor)
      : status_(status.ok() ? Status::Internal() : status), unused_() {}
  constexpr Result(StatusCode code)  // NOLINT(google-explicit-constructor)
      : Result(Status(code)) {}

  constexpr Result(const T& value) : status_(), value_(value) {}       // NOLINT
  constexpr Result(T&& value) : status_(), value_(std::move(value)) {}  // NOLINT

  Result(const Result& other) : status_(other.status_), unused_() {
    if (status_.ok()) ::new (static_cast<void*>(&value_)) T(other.value_);
  }
  Result(Result&& other) noexcept : status_(other.status_), unused_() {
    if (status_.ok()) ::new (static_cast<void*>(&value_)) T(std::move(other.value_));
  }
  Result& operator=(const Result& other) {
    if (this != &other) {
      Destroy();
      status_ = other.status_;
      if (status_.ok()) ::new (static_cast<void*>(&value_)) T(other.value_);
    }
    return *this;
  }
  Result& operator=(Result&& other) noexcept {
    if (this != &other) {
      Destroy();
      status_ = other.status_;
      if (status_.ok()) ::new (static_cast<void*>(&value_)) T(std::move(other.value_));
    }
    return *this;
  }
  ~Result() { Destroy(); }

  constexpr bool ok() const { return status_.ok(); }
  constexpr Status status() const { return status_; }

  T& value() & {
    NODEFL_CHECK(ok());
    return value_;
  }
  const T& value() const& {
    NODEFL_CHECK(ok());
    return value_;
  }
  T&& value() && {
    NODEFL_CHECK(ok());
    return std::move(value_);
  }
  T value_or(T fallback) const { return ok() ? value_ : fallback; }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  constexpr void IgnoreError() const {}

 private:
  void Destroy() {
    if (status_.ok()) value_.~T();
  }

  Status status_;
  union {
    char unused_;
    T value_;
  };
};

}  // namespace nodefl

#define NODEFL_CONCAT_INNER_(a, b) a##b
#define NODEFL_CONCAT_(a, b) NODEFL_CONCAT_INNER_(a, b)

// NODEFL_TRY_ASSIGN(auto x, MakeX()); returns the Status early on failure,
// otherwise declares/assigns `lhs` from the Result's value.
#define NODEFL_TRY_ASSIGN(lhs, expr) \
  NODEFL_TRY_ASSIGN_IMPL_(NODEFL_CONCAT_(nodefl_result_, __LINE__), lhs, expr)
#define NODEFL_TRY_ASSIGN_IMPL_(result, lhs, expr) \
  auto result = (expr);                            \
  if (!result.ok()) {                              \
    return result.status();                        \
  }                                                \
  lhs = std::move(result).value()
