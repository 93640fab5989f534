// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/compare/job_format.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::compare {

void EncodeCompareParameters(const CompareJobParameters& p, uint8_t (&out)[kCompareParametersBytes]) {
  for (size_t i = 0; i < kCompareSaltBytes; ++i) out[i] = p.salt[i];
  uint8_t* q = out + kCompareSaltBytes;
  q[0] = p.width;
  q[1] = p.digit_bits;
  q[2] = static_cast<uint8_t>(p.mode);
  q[3] = static_cast<uint8_t>(p.value);
  q[4] = p.results_public ? 1 : 0;
  StoreU16Le(p.max_sessions, q + 5);
}

Result<CompareJobParameters> DecodeCompareParameters(ConstByteSpan bytes) {
  if (bytes.size() != kCompareParametersBytes) return Status::InvalidArgument();
  CompareJobParameters p;
  for (size_t i = 0; i < kCompareSaltBytes; ++i) p.salt[i] = bytes[i];
  const uint8_t* q = bytes.data() + kCompareSaltBytes;
  p.width = q[0];
  p.digit_bits = q[1];
  if (p.width < 1 || p.width > kMaxCompareWidth || p.digit_bits > kMaxCompareDigitBits) {
    return Status::InvalidArgument();
  }
  if (q[2] > static_cast<uint8_t>(OtMode::kExtension)) return Status::InvalidArgument();
  p.mode = static_cast<OtMode>(q[2]);
  if (q[3] != static_cast<uint8_t>(CompareValue::kLogDegree) && q[3] != static_cast<uint8_t>(CompareValue::kDegree)) {
    return Status::InvalidArgument();
  }
  p.value = static_cast<CompareValue>(q[3]);
  if ((q[4] & ~1u) != 0) return Status::InvalidArgument();
  p.results_public = (q[4] & 1u) != 0;
  p.max_sessions = LoadU16Le(q + 5);
  if (p.max_sessions == 0) return Status::InvalidArgument();
  return p;
}

size_t EncodeSessionStart(const SessionStart& s, uint8_t* out) {
  StoreU32Le(s.session, out);
  StoreU32Le(s.peer, out + 4);
  out[8] = static_cast<uint8_t>(s.role);
  StoreU16Le(s.count, out + 9);
  return kSessionStartBytes;
}

Result<SessionStart> DecodeSessionStart(ConstByteSpan bytes) {
  if (bytes.size() != kSessionStartBytes) return Status::InvalidArgument();
  SessionStart s;
  s.session = LoadU32Le(bytes.data());
  s.peer = LoadU32Le(bytes.data() + 4);
  if (bytes[8] > static_cast<uint8_t>(Role::kB)) return Status::InvalidArgument();
  s.role = static_cast<Role>(bytes[8]);
  s.count = LoadU16Le(bytes.data() + 9);
  if (s.count == 0) return Status::InvalidArgument();
  return s;
}

Result<size_t> EncodeSessionResult(const SessionResult& r, ByteSpan out) {
  if (r.bit_bytes > sizeof(r.bits) || out.size() < kSessionResultHeaderBytes + r.bit_bytes) {
    return Status::InvalidArgument();
  }
  uint8_t* q = out.data();
  StoreU32Le(r.session, q);
  q[4] = r.done ? 1 : 0;
  q[5] = r.code;
  StoreU16Le(r.count, q + 6);
  StoreU32Le(r.bytes_sent, q + 8);
  StoreU32Le(r.bytes_received, q + 12);
  StoreU16Le(r.messages_sent, q + 16);
  StoreU16Le(r.bit_bytes, q + 18);
  for (size_t i = 0; i < r.bit_bytes; ++i) q[kSessionResultHeaderBytes + i] = r.bits[i];
  return kSessionResultHeaderBytes + r.bit_bytes;
}

Result<SessionResult> DecodeSessionResult(ConstByteSpan bytes) {
  if (bytes.size() < kSessionResultHeaderBytes) return Status::InvalidArgument();
  SessionResult r;
  const uint8_t* q = bytes.data();
  r.session = LoadU32Le(q);
  if (q[4] > 1) return Status::InvalidArgument();
  r.done = q[4] == 1;
  r.code = q[5];
  r.count = LoadU16Le(q + 6);
  r.bytes_sent = LoadU32Le(q + 8);
  r.bytes_received = LoadU32Le(q + 12);
  r.messages_sent = LoadU16Le(q + 16);
  r.bit_bytes = LoadU16Le(q + 18);
  if (r.bit_bytes > sizeof(r.bits) || bytes.size() != kSessionResultHeaderBytes + r.bit_bytes) {
    return Status::InvalidArgument();
  }
  if (r.bit_bytes != 0 && r.bit_bytes != (2u * r.count + 7u) / 8u) return Status::InvalidArgument();
  for (size_t i = 0; i < r.bit_bytes; ++i) r.bits[i] = q[kSessionResultHeaderBytes + i];
  return r;
}

}  // namespace nodefl::compare
