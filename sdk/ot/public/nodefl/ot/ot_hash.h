// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// KeyHash: the random oracle / correlation-robust hash of the OT protocols,
// SHA-256 (MbedTLS) over
//   "nodefl-ot" || domain (1 byte) || tag (32) || index (8, little endian) || parts...
// truncated to what the caller needs (at most 32 bytes). `domain` separates
// the uses (base OT keys, extension keys, table masks, ...); `index` is the
// OT's or entry's position in its run, so no two hashes of a run share an
// input prefix.
#pragma once

#include <mbedtls/sha256.h>

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/ot/ot_key.h"

namespace nodefl::ot {

enum class HashDomain : uint8_t {
  kBaseOt = 1,
  kExtension = 2,
  // 3: retired (table masks now come from AES streams, compare/)
  kTranscript = 4,
};

class KeyHash {
 public:
  KeyHash(HashDomain domain, const OtTag& tag, uint64_t index);
  ~KeyHash();
  KeyHash(const KeyHash&) = delete;
  KeyHash& operator=(const KeyHash&) = delete;

  void Add(ConstByteSpan part);
  // At most 32 bytes; kInternal if MbedTLS failed at any step.
  Status Finish(ByteSpan out);
  Status FinishKey(OtKey* key) { return Finish(ByteSpan(key->bytes, kOtKeyBytes)); }

 private:
  mbedtls_sha256_context context_;
  bool failed_ = false;
};

}  // namespace nodefl::ot
