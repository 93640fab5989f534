// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PkiResult: success, or a message that says what failed (for the
// nodefl-ca tool's error output and for test failures).
#pragma once

#include <string>
#include <utility>

namespace nodefl::pki {

class [[nodiscard]] PkiResult {
 public:
  static PkiResult Ok() { return PkiResult(); }
  // `mbedtls_error` (if not 0) is appended to the message as hex.
  static PkiResult Fail(std::string message, int mbedtls_error = 0);

  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

}  // namespace nodefl::pki
