// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Shared helpers for the wire tests: every body tag, envelopes filled with
// random or maximum-size content, and field-by-field equality.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "nodefl/random/drbg.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::protocol::testing {

inline constexpr pb_size_t kAllBodies[] = {
    nodefl_wire_Envelope_hello_tag,         nodefl_wire_Envelope_welcome_tag,
    nodefl_wire_Envelope_heartbeat_tag,     nodefl_wire_Envelope_error_tag,
    nodefl_wire_Envelope_goodbye_tag,       nodefl_wire_Envelope_peer_key_request_tag,
    nodefl_wire_Envelope_peer_certificate_tag, nodefl_wire_Envelope_relay_send_tag,
    nodefl_wire_Envelope_relay_deliver_tag, nodefl_wire_Envelope_relay_ack_tag,
    nodefl_wire_Envelope_relay_send_ack_tag,
    nodefl_wire_Envelope_job_start_tag,     nodefl_wire_Envelope_job_report_tag,
    nodefl_wire_Envelope_chunk_header_tag,  nodefl_wire_Envelope_chunk_tag,
};

// Random (or, with `max`, the largest possible) value / length.
inline uint64_t U64(Drbg& rng, bool max) { return max ? UINT64_MAX : rng.NextU64() >> rng.UniformBelow(64); }
inline uint32_t U32(Drbg& rng, bool max) { return max ? UINT32_MAX : rng.NextU32() >> rng.UniformBelow(32); }
inline size_t Len(Drbg& rng, bool max, size_t capacity) {
  return max ? capacity : static_cast<size_t>(rng.UniformBelow(capacity + 1));
}

template <typename BytesField>
void FillBytes(Drbg& rng, bool max, BytesField* field) {
  const size_t n = Len(rng, max, sizeof(field->bytes));
  ASSERT_TRUE(rng.Fill(Span<uint8_t>(field->bytes, n)).ok());
  field->size = static_cast<pb_size_t>(n);
}

template <size_t N>
void FillString(Drbg& rng, bool max, char (&s)[N]) {
  const size_t n = Len(rng, max, N - 1);
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('!' + rng.UniformBelow(94));
  s[n] = '\0';
}

// An envelope with body `tag`, every field set (to its maximum with `max`).
inline void FillEnvelope(pb_size_t tag, Drbg& rng, bool max, nodefl_wire_Envelope* env) {
  InitEnvelope(env, tag, U64(rng, max), U64(rng, max), U32(rng, max));
  auto& b = env->body;
  switch (tag) {
    case nodefl_wire_Envelope_hello_tag:
      b.hello.device_id = U32(rng, max);
      FillBytes(rng, max, &b.hello.resume_token);
      b.hello.max_frame_bytes = U32(rng, max);
      b.hello.last_delivered_relay_id = U64(rng, max);
      FillString(rng, max, b.hello.software);
      break;
    case nodefl_wire_Envelope_welcome_tag:
      FillBytes(rng, max, &b.welcome.resume_token);
      b.welcome.heartbeat_interval_ms = U32(rng, max);
      b.welcome.idle_timeout_ms = U32(rng, max);
      b.welcome.max_frame_bytes = U32(rng, max);
      b.welcome.pending_messages = U32(rng, max);
      b.welcome.resumed = max || rng.Bernoulli(0.5);
      b.welcome.last_relay_send_id = U64(rng, max);
      break;
    case nodefl_wire_Envelope_heartbeat_tag:
      b.heartbeat.sent_at_us = U64(rng, max);
      break;
    case nodefl_wire_Envelope_error_tag:
      b.error.code = U32(rng, max);
      FillString(rng, max, b.error.message);
      b.error.offending_seq = U64(rng, max);
      break;
    case nodefl_wire_Envelope_goodbye_tag:
      FillString(rng, max, b.goodbye.reason);
      break;
    case nodefl_wire_Envelope_peer_key_request_tag:
      b.peer_key_request.device_ids_count =
          static_cast<pb_size_t>(Len(rng, max, kMaxPeerKeyRequestIds));
      for (pb_size_t i = 0; i < b.peer_key_request.device_ids_count; ++i) {
        b.peer_key_request.device_ids[i] = U32(rng, max);
      }
      break;
    case nodefl_wire_Envelope_peer_certificate_tag:
      b.peer_certificate.device_id = U32(rng, max);
      b.peer_certificate.found = max || rng.Bernoulli(0.5);
      FillBytes(rng, max, &b.peer_certificate.certificate_der);
      break;
    case nodefl_wire_Envelope_relay_send_tag:
      b.relay_send.dst = U32(rng, max);
      FillBytes(rng, max, &b.relay_send.sealed);
      b.relay_send.send_id = U64(rng, max);
      break;
    case nodefl_wire_Envelope_relay_deliver_tag:
      b.relay_deliver.src = U32(rng, max);
      FillBytes(rng, max, &b.relay_deliver.sealed);
      b.relay_deliver.relay_id = U64(rng, max);
      break;
    case nodefl_wire_Envelope_relay_ack_tag:
      b.relay_ack.relay_id = U64(rng, max);
      break;
    case nodefl_wire_Envelope_relay_send_ack_tag:
      b.relay_send_ack.send_id = U64(rng, max);
      break;
    case nodefl_wire_Envelope_job_start_tag:
      b.job_start.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
      b.job_start.deadline_ms = U32(rng, max);
      FillBytes(rng, max, &b.job_start.parameters);
      break;
    case nodefl_wire_Envelope_job_report_tag:
      b.job_report.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
      b.job_report.code = U32(rng, max);
      b.job_report.sent = U32(rng, max);
      b.job_report.received = U32(rng, max);
      b.job_report.duplicates = U32(rng, max);
      b.job_report.rejected = U32(rng, max);
      b.job_report.expected = U32(rng, max);
      break;
    case nodefl_wire_Envelope_chunk_header_tag:
      b.chunk_header.transfer_id = U64(rng, max);
      b.chunk_header.artefact = U32(rng, max);
      b.chunk_header.total_bytes = U64(rng, max);
      b.chunk_header.chunk_count = U32(rng, max);
      FillBytes(rng, true, &b.chunk_header.sha256);
      break;
    case nodefl_wire_Envelope_chunk_tag:
      b.chunk.transfer_id = U64(rng, max);
      b.chunk.index = U32(rng, max);
      FillBytes(rng, max, &b.chunk.data);
      break;
    default:
      FAIL() << "no filler for body " << tag;
  }
}

template <typename BytesField>
bool SameBytes(const BytesField& a, const BytesField& b) {
  return a.size == b.size && a.size <= sizeof(a.bytes) && std::memcmp(a.bytes, b.bytes, a.size) == 0;
}

// Field-by-field equality of two envelopes with the same body.
inline ::testing::AssertionResult SameEnvelope(const nodefl_wire_Envelope& x,
                                               const nodefl_wire_Envelope& y) {
  if (x.version != y.version || x.seq != y.seq || x.job_id != y.job_id || x.round != y.round) {
    return ::testing::AssertionFailure() << "header fields differ";
  }
  if (x.which_body != y.which_body) {
    return ::testing::AssertionFailure()
           << "body " << BodyName(x.which_body) << " vs " << BodyName(y.which_body);
  }
  const auto& a = x.body;
  const auto& b = y.body;
  bool same = false;
  switch (x.which_body) {
    case nodefl_wire_Envelope_hello_tag:
      same = a.hello.device_id == b.hello.device_id &&
             SameBytes(a.hello.resume_token, b.hello.resume_token) &&
             a.hello.max_frame_bytes == b.hello.max_frame_bytes &&
             a.hello.last_delivered_relay_id == b.hello.last_delivered_relay_id &&
             std::strcmp(a.hello.software, b.hello.software) == 0;
      break;
    case nodefl_wire_Envelope_welcome_tag:
      same = SameBytes(a.welcome.resume_token, b.welcome.resume_token) &&
             a.welcome.heartbeat_interval_ms == b.welcome.heartbeat_interval_ms &&
             a.welcome.idle_timeout_ms == b.welcome.idle_timeout_ms &&
             a.welcome.max_frame_bytes == b.welcome.max_frame_bytes &&
             a.welcome.pending_messages == b.welcome.pending_messages &&
             a.welcome.resumed == b.welcome.resumed &&
             a.welcome.last_relay_send_id == b.welcome.last_relay_send_id;
      break;
    case nodefl_wire_Envelope_heartbeat_tag:
      same = a.heartbeat.sent_at_us == b.heartbeat.sent_at_us;
      break;
    case nodefl_wire_Envelope_error_tag:
      same = a.error.code == b.error.code && std::strcmp(a.error.message, b.error.message) == 0 &&
             a.error.offending_seq == b.error.offending_seq;
      break;
    case nodefl_wire_Envelope_goodbye_tag:
      same = std::strcmp(a.goodbye.reason, b.goodbye.reason) == 0;
      break;
    case nodefl_wire_Envelope_peer_key_request_tag:
      same = a.peer_key_request.device_ids_count == b.peer_key_request.device_ids_count &&
             a.peer_key_request.device_ids_count <= kMaxPeerKeyRequestIds &&
             std::memcmp(a.peer_key_request.device_ids, b.peer_key_request.device_ids,
                         a.peer_key_request.device_ids_count * sizeof(uint32_t)) == 0;
      break;
    case nodefl_wire_Envelope_peer_certificate_tag:
      same = a.peer_certificate.device_id == b.peer_certificate.device_id &&
             a.peer_certificate.found == b.peer_certificate.found &&
             SameBytes(a.peer_certificate.certificate_der, b.peer_certificate.certificate_der);
      break;
    case nodefl_wire_Envelope_relay_send_tag:
      same = a.relay_send.dst == b.relay_send.dst && SameBytes(a.relay_send.sealed, b.relay_send.sealed) &&
             a.relay_send.send_id == b.relay_send.send_id;
      break;
    case nodefl_wire_Envelope_relay_deliver_tag:
      same = a.relay_deliver.src == b.relay_deliver.src &&
             SameBytes(a.relay_deliver.sealed, b.relay_deliver.sealed) &&
             a.relay_deliver.relay_id == b.relay_deliver.relay_id;
      break;
    case nodefl_wire_Envelope_relay_ack_tag:
      same = a.relay_ack.relay_id == b.relay_ack.relay_id;
      break;
    case nodefl_wire_Envelope_relay_send_ack_tag:
      same = a.relay_send_ack.send_id == b.relay_send_ack.send_id;
      break;
    case nodefl_wire_Envelope_job_start_tag:
      same = EnumValue(a.job_start.kind) == EnumValue(b.job_start.kind) &&
             a.job_start.deadline_ms == b.job_start.deadline_ms &&
             SameBytes(a.job_start.parameters, b.job_start.parameters);
      break;
    case nodefl_wire_Envelope_job_report_tag:
      same = EnumValue(a.job_report.kind) == EnumValue(b.job_report.kind) &&
             a.job_report.code == b.job_report.code && a.job_report.sent == b.job_report.sent &&
             a.job_report.received == b.job_report.received &&
             a.job_report.duplicates == b.job_report.duplicates &&
             a.job_report.rejected == b.job_report.rejected &&
             a.job_report.expected == b.job_report.expected;
      break;
    case nodefl_wire_Envelope_chunk_header_tag:
      same = a.chunk_header.transfer_id == b.chunk_header.transfer_id &&
             a.chunk_header.artefact == b.chunk_header.artefact &&
             a.chunk_header.total_bytes == b.chunk_header.total_bytes &&
             a.chunk_header.chunk_count == b.chunk_header.chunk_count &&
             SameBytes(a.chunk_header.sha256, b.chunk_header.sha256);
      break;
    case nodefl_wire_Envelope_chunk_tag:
      same = a.chunk.transfer_id == b.chunk.transfer_id && a.chunk.index == b.chunk.index &&
             SameBytes(a.chunk.data, b.chunk.data);
      break;
    default:
      return ::testing::AssertionFailure() << "unknown body " << x.which_body;
  }
  if (!same) return ::testing::AssertionFailure() << BodyName(x.which_body) << " fields differ";
  return ::testing::AssertionSuccess();
}

}  // namespace nodefl::protocol::testing
