// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_NEIGHBOUR_ECHO between the device role
// (sdk/echo) and the server's coordinator (server/jobs). All integers
// little endian.
//
// Round 1: JobStart.parameters = salt (kEchoJobSaltBytes: random, from the
// server; bound into the job keys, whose uniqueness comes from the devices'
// ephemeral keys, seal/job_keys.h), optionally followed by
// messages_per_edge (u32) and payload_bytes (u32), the benchmark's load
// knobs (defaults 1 and kEchoHeaderBytes). Each message is sealed to one
// neighbour and relayed; a message is kEchoHeaderBytes of header followed
// by filler up to payload_bytes.
//
// Round 2, server -> device: JobData{kind = kEchoRecordPeersGone}: devices
// the server gave up on in this job (they missed round 1 after announcing
// a key, or went offline in round 2 for longer than the server's grace). A
// receiver stops waiting for their messages and reports at once instead of
// at its deadline (messages that still come are counted). Layout: u32 count,
// count x u32 device id, 1 .. kEchoMaxPeersGonePerRecord ids.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::echo {

inline constexpr size_t kEchoJobSaltBytes = 16;
inline constexpr size_t kEchoHeaderBytes = 56;
inline constexpr size_t kEchoParametersBytes = kEchoJobSaltBytes + 8;
inline constexpr uint32_t kEchoMaxMessagesPerEdge = 1u << 20;
// The largest message is the largest sealed plaintext.
inline constexpr uint32_t kEchoMaxPayloadBytes = static_cast<uint32_t>(protocol::kMaxSealedPlaintextBytes);

// JobData.kind of the peers-gone record.
inline constexpr uint32_t kEchoRecordPeersGone = 1;
// As many ids as fit JobData.data (4,096 bytes, envelope.options).
inline constexpr uint32_t kEchoMaxPeersGonePerRecord = 1023;

struct EchoParameters {
  uint8_t salt[kEchoJobSaltBytes] = {};
  uint32_t messages_per_edge = 1;
  uint32_t payload_bytes = kEchoHeaderBytes;
};

// Ok when the load knobs are inside the bounds above.
[[nodiscard]] Status ValidateEchoParameters(const EchoParameters& params);

// Always the long form (kEchoParametersBytes); `out` must hold it.
[[nodiscard]] Result<size_t> EncodeEchoParameters(const EchoParameters& params, ByteSpan out);
// Accepts the salt alone (defaults for the knobs) or the long form.
[[nodiscard]] Result<EchoParameters> DecodeEchoParameters(ConstByteSpan bytes);

// kEchoRecordPeersGone: 1 .. kEchoMaxPeersGonePerRecord ids; returns the
// record size. kInvalidArgument for a count out of range,
// kResourceExhausted for `out` too short.
[[nodiscard]] Result<size_t> EncodeEchoPeersGone(Span<const uint32_t> devices, ByteSpan out);
// Checks a record (count in range, exact size) and returns its count;
// EchoPeersGoneAt reads id i of a record that passed.
[[nodiscard]] Result<uint32_t> DecodeEchoPeersGone(ConstByteSpan record);
uint32_t EchoPeersGoneAt(ConstByteSpan record, size_t i);

}  // namespace nodefl::echo
