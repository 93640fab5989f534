// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Status: the error model of the whole SDK. Every fallible SDK call returns a
// Status (or a Result<T>, see result.h). There are no exceptions in the device
// core, so a Status is the only way an error travels; [[nodiscard]] makes the
// compiler refuse a silently dropped one.
#pragma once

#include <cstdint>

namespace nodefl {

// Codes follow the widely used canonical set so that they map one to one onto
// the wire contract and onto the server's logs.
enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr explicit Status(StatusCode code) : code_(code) {}

  static constexpr Status Ok() { return Status(); }
  static constexpr Status Cancelled() { return Status(StatusCode::kCancelled); }
  static constexpr Status Unknown() { return Status(StatusCode::kUnknown); }
  static constexpr Status InvalidArgument() { return Status(StatusCode::kInvalidArgument); }
  static constexpr Status DeadlineExceeded() { return Status(StatusCode::kDeadlineExceeded); }
  static constexpr Status NotFound() { return Status(StatusCode::kNotFound); }
  static constexpr Status AlreadyExists() { return Status(StatusCode::kAlreadyExists); }
  static constexpr Status PermissionDenied() { return Status(StatusCode::kPermissionDenied); }
  static constexpr Status ResourceExhausted() { return Status(StatusCode::kResourceExhausted); }
  static constexpr Status FailedPrecondition() { return Status(StatusCode::kFailedPrecondition); }
  static constexpr Status Aborted() { return Status(StatusCode::kAborted); }
  static constexpr Status OutOfRange() { return Status(StatusCode::kOutOfRange); }
  static constexpr Status Unimplemented() { return Status(StatusCode::kUnimplemented); }
  static constexpr Status Internal() { return Status(StatusCode::kInternal); }
  static constexpr Status Unavailable() { return Status(StatusCode::kUnavailable); }
  static constexpr Status DataLoss() { return Status(StatusCode::kDataLoss); }
  static constexpr Status Unauthenticated() { return Status(StatusCode::kUnauthenticated); }

  constexpr bool ok() const { return code_ == StatusCode::kOk; }
  constexpr StatusCode code() const { return code_; }

  // A static, human readable name ("OK", "INVALID_ARGUMENT", ...).
  const char* str() const;

  // Spells out, at the call site, that an error is deliberately not handled.
  constexpr void IgnoreError() const {}

  friend constexpr bool operator==(Status a, Status b) { return a.code_ == b.code_; }
  friend constexpr bool operator!=(Status a, Status b) { return a.code_ != b.code_; }

 private:
  StatusCode code_ = StatusCode::kOk;
};

const char* StatusCodeName(StatusCode code);

}  // namespace nodefl

// Returns early from the enclosing function if `expr` yields a non-OK Status.
#define NODEFL_TRY(expr)                              \
  do {                                                \
    const ::nodefl::Status nodefl_try_status_ = (expr); \
    if (!nodefl_try_status_.ok()) {                   \
      return nodefl_try_status_;                      \
    }                                                 \
  } while (0)
