// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Envelope encoding and decoding (nanopb, fixed structs, no heap) and small
// helpers for building envelopes. Framing is in frame.h; the protocol rules
// (who sends what, which errors close the connection) are in
// docs/protocol.md.
//
// A nodefl_wire_Envelope is about 4.2 KiB (its body union holds a 4 KiB
// sealed payload or chunk). Keep one or two per connection in static or
// object storage rather than on a small device stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::protocol {

// Decodes one frame payload into `*out`, which is overwritten entirely
// (even on failure, its contents are then unspecified). Checks, in order:
//   kDataLoss           not a valid Envelope encoding, or a field exceeds its
//                       bound (envelope.options), or trailing garbage
//   kFailedPrecondition version != kProtocolVersion
//   kUnimplemented      no body, or a body this version does not know
//                       (unknown fields are skipped by protobuf, so an
//                       unknown oneof member arrives as which_body == 0)
// Every error means: send Error{code} and close the connection.
Status DecodeEnvelope(ConstByteSpan payload, nodefl_wire_Envelope* out);

// Encodes `env` (payload only, no length prefix) into `out`. Returns the
// number of bytes written.
//   kInvalidArgument    CheckEnvelope fails, or a field is out of bounds
//                       (bytes size above capacity, unterminated string)
//   kResourceExhausted  the encoding is larger than `out`
Result<size_t> EncodeEnvelope(const nodefl_wire_Envelope& env, ByteSpan out);

// Encoded size of `env` without writing it (nanopb sizing stream).
// kInvalidArgument as for EncodeEnvelope.
Result<size_t> EncodedEnvelopeSize(const nodefl_wire_Envelope& env);

// What a sender must guarantee before encoding: version == kProtocolVersion
// and a known body. kInvalidArgument otherwise.
Status CheckEnvelope(const nodefl_wire_Envelope& env);

// Zeroes `*env` and sets version, body tag and the header fields. The body
// tag must be 0 (filled in later) or a known body (programming error
// otherwise).
void InitEnvelope(nodefl_wire_Envelope* env, pb_size_t which_body, uint64_t seq = 0,
                  uint64_t job_id = 0, uint32_t round = 0);

// An Error envelope: code, message (truncated to fit) and the seq of the
// message that caused it (0 if none).
void InitError(nodefl_wire_Envelope* env, StatusCode code, const char* message,
               uint64_t offending_seq, uint64_t seq = 0);

// True for the body tags of protocol version 1 (nodefl_wire_Envelope_*_tag).
bool IsKnownBody(pb_size_t which_body);

// The oneof member name ("hello", "relay_deliver", ...), "none" for 0 and
// "unknown" otherwise. Static strings, for logs.
const char* BodyName(pb_size_t which_body);

// Which side may send a body (docs/protocol.md, "Messages").
enum class Peer : uint8_t { kDevice, kServer };
bool MaySend(Peer sender, pb_size_t which_body);

// ---- bounded fields ----------------------------------------------------------

// Copies the NUL-terminated `src` into a nanopb string field, truncating to
// fit (at a UTF-8 character boundary) and always terminating. Returns false
// if it had to truncate. `src` may be nullptr (empty string).
template <size_t N>
bool SetString(char (&dst)[N], const char* src) {
  static_assert(N >= 1);
  size_t n = 0;
  if (src != nullptr) {
    while (n < N - 1 && src[n] != '\0') ++n;
  }
  const bool complete = src == nullptr || src[n] == '\0';
  if (!complete) {
    // Do not cut a multi-byte UTF-8 sequence: src[n] is the first byte left
    // out; if it continues a character, leave out that character's start too.
    while (n > 0 && (static_cast<unsigned char>(src[n]) & 0xC0u) == 0x80u) --n;
  }
  if (n > 0) std::memcpy(dst, src, n);
  dst[n] = '\0';
  return complete;
}

// Copies `src` into a nanopb bytes field (PB_BYTES_ARRAY_T). kResourceExhausted
// (and `*dst` unchanged) if it does not fit.
template <typename BytesField>
Status SetBytes(BytesField* dst, ConstByteSpan src) {
  if (src.size() > sizeof(dst->bytes)) return Status::ResourceExhausted();
  if (!src.empty()) std::memcpy(dst->bytes, src.data(), src.size());
  dst->size = static_cast<pb_size_t>(src.size());
  return Status::Ok();
}

// The bytes of a nanopb bytes field. A size above the capacity (only possible
// in a struct not produced by DecodeEnvelope) is clamped to the capacity.
template <typename BytesField>
ConstByteSpan BytesOf(const BytesField& field) {
  const size_t n = field.size <= sizeof(field.bytes) ? field.size : sizeof(field.bytes);
  return ConstByteSpan(field.bytes, n);
}

// The numeric value of a decoded enum field. proto3 enums are open: a newer
// peer may send a JobKind this build does not list, and nanopb stores it
// as is. Reading such a value through the C++ enum type is undefined
// behaviour, so read it through this.
template <typename Enum>
uint32_t EnumValue(const Enum& field) {
  static_assert(std::is_enum_v<Enum>);
  std::underlying_type_t<Enum> raw;
  std::memcpy(&raw, &field, sizeof(raw));
  return static_cast<uint32_t>(raw);
}

// True if `kind` is a JobKind this build knows (JOB_KIND_UNSPECIFIED excluded).
bool IsKnownJobKind(uint32_t kind);

}  // namespace nodefl::protocol
