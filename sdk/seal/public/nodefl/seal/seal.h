// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sealing device-to-device payloads so the relaying server can neither read
// nor alter them: AES-256-GCM under the direction key of a PairKeys
// (pair_keys.h).
//
//   sealed = key id (8) || counter (8, BE) || ciphertext (plaintext's length) || tag (16)
//   nonce  = 0x00000000 || counter (8, BE)                     (12 bytes)
//   AAD    = src (4, BE) || dst (4, BE) || job_id (8, BE) || counter (8, BE)
//
// The key id (pair_keys.h) names the direction key in clear. It is not
// authenticated beyond the key itself (a message under another key fails
// to open whatever its id says), so a receiver may use it only as a hint:
// a message whose id is not the one it holds for the sender was sealed
// under keys it does not have (the sender restarted its part of the job
// with a new ephemeral key, or the receiver did), or was tampered with.
// It also lets a test or an auditor at the relay check that no (key,
// nonce) pair ever repeats without holding any key.
//
// The AAD binds the message to its sender, receiver and job: a relay that
// re-addresses it, replays it into another job or reflects it back to its
// sender makes Open fail (kUnauthenticated). Replays of the very same
// message are caught by the receiver's ReplayWindow (replay_window.h).
//
// Counter rules (the sender's responsibility; a violation breaks GCM's
// confidentiality and integrity for that key):
//   * counter > 0, and strictly increasing for each direction key, i.e. for
//     each ordered (src, dst) pair under the keys in use;
//   * jobs seal with per-job keys (job_keys.h: derived from the pair keys
//     and both devices' fresh ephemeral keys), so counters may restart at 1
//     with every new ephemeral key; they must never repeat while one key
//     pair lives (a JobStart that repeats the running job keeps both);
//   * keys used directly as derived by DerivePairKeys are fixed for as long
//     as the two certificates are: counters under them must increase over
//     that whole lifetime.
// The receiver's ReplayWindow enforces the same order.
//
// Sizes: kSealOverheadBytes = 32 on top of the plaintext; a sealed payload
// is at most kMaxSealedBytes (the bound of RelaySend.sealed in
// envelope.options), so a plaintext is at most kMaxSealPlaintextBytes.
// Heap: AES-GCM key set-up allocates a small cipher context inside MbedTLS
// (mbedtls_cipher_setup); nodefl's code does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::seal {

inline constexpr size_t kSealCounterBytes = 8;
inline constexpr size_t kSealTagBytes = 16;
inline constexpr size_t kSealOverheadBytes = kSealKeyIdBytes + kSealCounterBytes + kSealTagBytes;
// The bound of nodefl.wire.RelaySend.sealed / RelayDeliver.sealed.
inline constexpr size_t kMaxSealedBytes = protocol::kMaxSealedBytes;
inline constexpr size_t kMaxSealPlaintextBytes = kMaxSealedBytes - kSealOverheadBytes;
static_assert(kSealOverheadBytes == protocol::kSealedOverheadBytes, "the contract's sealed layout");

struct SealHeader {
  uint32_t src = 0;     // the sealing device
  uint32_t dst = 0;     // the device that may open it
  uint64_t job_id = 0;  // the job the payload belongs to (0 outside jobs)
  uint64_t counter = 0; // > 0, strictly increasing per (src, dst); see above
};

// Seals `plaintext` from header.src to header.dst into `out` (which must not
// overlap `plaintext`); returns the sealed size, plaintext.size() + 32.
// kInvalidArgument if the keys are not valid or not for {src, dst}, or the
// counter is 0; kOutOfRange if the plaintext exceeds kMaxSealPlaintextBytes;
// kResourceExhausted if `out` is too small.
Result<size_t> Seal(const PairKeys& keys, const SealHeader& header, ConstByteSpan plaintext,
                    ByteSpan out);

// Opens a payload sealed by `src` for `dst` in job `job_id`. Writes the
// plaintext (sealed.size() - 32 bytes) to `plaintext_out` (not overlapping
// `sealed`) and its counter to *counter_out, which the caller then passes
// to the sender's ReplayWindow. kUnauthenticated for anything that does not
// verify (tampering, wrong src/dst/job, counter 0, truncated input, a key
// id other than that of `keys`' direction key);
// kInvalidArgument if the keys are not valid or not for {src, dst};
// kResourceExhausted if `plaintext_out` is too small. On failure nothing is
// released: `plaintext_out` is zeroed.
Result<size_t> Open(const PairKeys& keys, uint32_t src, uint32_t dst, uint64_t job_id,
                    ConstByteSpan sealed, ByteSpan plaintext_out, uint64_t* counter_out);

// The key id and counter a sealed payload carries (not authenticated);
// false if it is too short to carry them.
bool PeekSealed(ConstByteSpan sealed, uint8_t (&key_id)[kSealKeyIdBytes], uint64_t* counter);

}  // namespace nodefl::seal
