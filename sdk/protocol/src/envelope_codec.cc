// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/envelope_codec.h"

#include <pb_decode.h>
#include <pb_encode.h>

#include <cstring>

#include "nodefl/core/assert.h"

namespace nodefl::protocol {
namespace {

constexpr uint8_t kFromDevice = 1;
constexpr uint8_t kFromServer = 2;

struct BodyInfo {
  pb_size_t tag;
  const char* name;
  uint8_t senders;
};

// Protocol version 2. docs/protocol.md has the same table with the reasons.
constexpr BodyInfo kBodies[] = {
    {nodefl_wire_Envelope_hello_tag, "hello", kFromDevice},
    {nodefl_wire_Envelope_welcome_tag, "welcome", kFromServer},
    {nodefl_wire_Envelope_heartbeat_tag, "heartbeat", kFromDevice | kFromServer},
    {nodefl_wire_Envelope_error_tag, "error", kFromDevice | kFromServer},
    {nodefl_wire_Envelope_goodbye_tag, "goodbye", kFromDevice | kFromServer},
    {nodefl_wire_Envelope_peer_key_request_tag, "peer_key_request", kFromDevice},
    {nodefl_wire_Envelope_peer_certificate_tag, "peer_certificate", kFromServer},
    {nodefl_wire_Envelope_job_key_tag, "job_key", kFromDevice},
    {nodefl_wire_Envelope_relay_send_tag, "relay_send", kFromDevice},
    {nodefl_wire_Envelope_relay_deliver_tag, "relay_deliver", kFromServer},
    {nodefl_wire_Envelope_relay_ack_tag, "relay_ack", kFromDevice},
    {nodefl_wire_Envelope_relay_send_ack_tag, "relay_send_ack", kFromServer},
    {nodefl_wire_Envelope_job_start_tag, "job_start", kFromServer},
    {nodefl_wire_Envelope_job_report_tag, "job_report", kFromDevice},
    {nodefl_wire_Envelope_job_data_tag, "job_data", kFromDevice | kFromServer},
    {nodefl_wire_Envelope_chunk_header_tag, "chunk_header", kFromDevice | kFromServer},
    {nodefl_wire_Envelope_chunk_tag, "chunk", kFromDevice | kFromServer},
};

const BodyInfo* FindBody(pb_size_t which_body) {
  for (const BodyInfo& info : kBodies) {
    if (info.tag == which_body) return &info;
  }
  return nullptr;
}

// A strict pass over the protobuf wire format before nanopb decodes it.
// nanopb accepts a zero tag as "end of message" (for zero-terminated
// messages) and, inside a submessage, then silently skips whatever follows;
// protobuf proper has no field 0, so nodefl rejects it, at the top level and
// inside the body. Everything else (bounds, wire type per field) nanopb
// checks itself.
bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    const uint8_t byte = *p++;
    v |= static_cast<uint64_t>(byte & 0x7f) << (shift < 64 ? shift : 0);
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

bool WellFormed(const uint8_t* p, const uint8_t* end, bool top_level) {
  while (p != end) {
    uint64_t key = 0;
    if (!ReadVarint(p, end, &key)) return false;
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1fffffffu) return false;
    uint64_t skip = 0;
    switch (key & 7) {
      case 0: {  // varint
        uint64_t ignored = 0;
        if (!ReadVarint(p, end, &ignored)) return false;
        break;
      }
      case 1:  // fixed64
        skip = 8;
        break;
      case 5:  // fixed32
        skip = 4;
        break;
      case 2: {  // length-delimited
        if (!ReadVarint(p, end, &skip)) return false;
        if (skip > static_cast<uint64_t>(end - p)) return false;
        if (top_level && field <= UINT16_MAX && FindBody(static_cast<pb_size_t>(field)) != nullptr &&
            !WellFormed(p, p + skip, false)) {
          return false;
        }
        break;
      }
      default:  // 3, 4 (groups) and 6, 7 do not occur in proto3
        return false;
    }
    if (skip > static_cast<uint64_t>(end - p)) return false;
    p += skip;
  }
  return true;
}

}  // namespace

bool IsKnownBody(pb_size_t which_body) { return FindBody(which_body) != nullptr; }

const char* BodyName(pb_size_t which_body) {
  if (which_body == 0) return "none";
  const BodyInfo* info = FindBody(which_body);
  return info == nullptr ? "unknown" : info->name;
}

bool MaySend(Peer sender, pb_size_t which_body) {
  const BodyInfo* info = FindBody(which_body);
  if (info == nullptr) return false;
  return (info->senders & (sender == Peer::kDevice ? kFromDevice : kFromServer)) != 0;
}

bool IsKnownJobKind(uint32_t kind) {
  return kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE) ||
         kind == static_cast<uint32_t>(nodefl_wire_JobKind_JOB_KIND_KCAGC);
}

Status CheckEnvelope(const nodefl_wire_Envelope& env) {
  if (env.version != kProtocolVersion || !IsKnownBody(env.which_body)) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Status DecodeEnvelope(ConstByteSpan payload, nodefl_wire_Envelope* out) {
  NODEFL_CHECK(out != nullptr);
  // An empty payload would decode as an all-default envelope; no valid
  // envelope is empty (version is never 0).
  if (payload.empty()) {
    std::memset(out, 0, sizeof(*out));
    return Status::DataLoss();
  }
  if (!WellFormed(payload.data(), payload.data() + payload.size(), true)) {
    std::memset(out, 0, sizeof(*out));
    return Status::DataLoss();
  }
  pb_istream_t stream = pb_istream_from_buffer(payload.data(), payload.size());
  if (!pb_decode(&stream, nodefl_wire_Envelope_fields, out) || stream.bytes_left != 0) {
    return Status::DataLoss();
  }
  if (out->version != kProtocolVersion) return Status::FailedPrecondition();
  if (!IsKnownBody(out->which_body)) return Status::Unimplemented();
  return Status::Ok();
}

Result<size_t> EncodedEnvelopeSize(const nodefl_wire_Envelope& env) {
  NODEFL_TRY(CheckEnvelope(env));
  size_t size = 0;
  if (!pb_get_encoded_size(&size, nodefl_wire_Envelope_fields, &env)) {
    return Status::InvalidArgument();
  }
  return size;
}

Result<size_t> EncodeEnvelope(const nodefl_wire_Envelope& env, ByteSpan out) {
  NODEFL_TRY_ASSIGN(const size_t size, EncodedEnvelopeSize(env));
  if (size > out.size()) return Status::ResourceExhausted();
  pb_ostream_t stream = pb_ostream_from_buffer(out.data(), size);
  if (!pb_encode(&stream, nodefl_wire_Envelope_fields, &env) || stream.bytes_written != size) {
    return Status::Internal();  // the sizing pass accepted what encoding refused
  }
  return size;
}

void InitEnvelope(nodefl_wire_Envelope* env, pb_size_t which_body, uint64_t seq,
                  uint64_t job_id, uint32_t round) {
  NODEFL_CHECK(env != nullptr);
  NODEFL_CHECK(which_body == 0 || IsKnownBody(which_body));
  std::memset(env, 0, sizeof(*env));
  env->version = kProtocolVersion;
  env->seq = seq;
  env->job_id = job_id;
  env->round = round;
  env->which_body = which_body;
}

void InitError(nodefl_wire_Envelope* env, StatusCode code, const char* message,
               uint64_t offending_seq, uint64_t seq) {
  InitEnvelope(env, nodefl_wire_Envelope_error_tag, seq);
  env->body.error.code = static_cast<uint32_t>(code);
  SetString(env->body.error.message, message);
  env->body.error.offending_seq = offending_seq;
}

}  // namespace nodefl::protocol
