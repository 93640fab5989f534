// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/pki/pki_result.h"

#include <cstdio>

namespace nodefl::pki {

PkiResult PkiResult::Fail(std::string message, int mbedtls_error) {
  PkiResult result;
  if (message.empty()) message = "failed";
  if (mbedtls_error != 0) {
    char code[32];
    std::snprintf(code, sizeof(code), " (MbedTLS error -0x%04x)",
                  static_cast<unsigned>(-mbedtls_error));
    message += code;
  }
  result.message_ = std::move(message);
  return result;
}

}  // namespace nodefl::pki
