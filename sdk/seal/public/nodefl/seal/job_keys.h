// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Per-job keys. Pairwise keys from static-static ECDH are the same every time
// two devices derive them, and Seal() derives its GCM nonce from a counter
// that a job starts at 1. Sealing with the pair keys directly would therefore
// reuse (key, nonce) pairs across jobs or after an app restart, which breaks
// AES-GCM. Every job instead seals with keys derived from the pair keys and
// a fresh random salt the server publishes with the job:
//   job keys = HKDF-SHA256(ikm = pair keys, salt = job salt,
//                          info = "nodefl job keys v1" || job_id || low_id || high_id)
// A salt must never be reused for two jobs with the same id; 16 random bytes
// make that a non-event.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/seal/pair_keys.h"

namespace nodefl::seal {

inline constexpr size_t kMinJobSaltBytes = 16;

// kInvalidArgument if `pair` is not valid or the salt is shorter than
// kMinJobSaltBytes. `out` gets the same ids as `pair`.
Status DeriveJobKeys(const PairKeys& pair, ConstByteSpan job_salt, uint64_t job_id, PairKeys* out);

}  // namespace nodefl::seal
