// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/lumos/mcmc_format.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::lumos {

Result<size_t> EncodeMcmcParameters(const McmcRoundParameters& p, ByteSpan out) {
  if (out.size() < kMcmcParametersBytes) return Status::ResourceExhausted();
  if (p.phase != McmcPhase::kKeys && p.phase != McmcPhase::kIterate && p.phase != McmcPhase::kReport) {
    return Status::InvalidArgument();
  }
  if (p.width < 1 || p.width > compare::kMaxCompareWidth || p.digit_bits > compare::kMaxCompareDigitBits ||
      p.mode > compare::OtMode::kExtension || p.max_sessions == 0) {
    return Status::InvalidArgument();
  }
  out[0] = kMcmcVersion;
  out[1] = static_cast<uint8_t>(p.phase);
  out[2] = p.upload_kept ? 1 : 0;
  for (size_t i = 0; i < compare::kCompareSaltBytes; ++i) out[3 + i] = p.salt[i];
  uint8_t* q = out.data() + 3 + compare::kCompareSaltBytes;
  q[0] = p.width;
  q[1] = p.digit_bits;
  q[2] = static_cast<uint8_t>(p.mode);
  StoreU16Le(p.max_sessions, q + 3);
  return kMcmcParametersBytes;
}

Result<McmcRoundParameters> DecodeMcmcParameters(ConstByteSpan bytes) {
  if (bytes.size() != kMcmcParametersBytes || bytes[0] != kMcmcVersion) return Status::InvalidArgument();
  if (bytes[1] < static_cast<uint8_t>(McmcPhase::kKeys) || bytes[1] > static_cast<uint8_t>(McmcPhase::kReport)) {
    return Status::InvalidArgument();
  }
  if ((bytes[2] & ~1u) != 0) return Status::InvalidArgument();
  McmcRoundParameters p;
  p.phase = static_cast<McmcPhase>(bytes[1]);
  p.upload_kept = (bytes[2] & 1u) != 0;
  for (size_t i = 0; i < compare::kCompareSaltBytes; ++i) p.salt[i] = bytes[3 + i];
  const uint8_t* q = bytes.data() + 3 + compare::kCompareSaltBytes;
  p.width = q[0];
  p.digit_bits = q[1];
  if (p.width < 1 || p.width > compare::kMaxCompareWidth || p.digit_bits > compare::kMaxCompareDigitBits) {
    return Status::InvalidArgument();
  }
  if (q[2] > static_cast<uint8_t>(compare::OtMode::kExtension)) return Status::InvalidArgument();
  p.mode = static_cast<compare::OtMode>(q[2]);
  p.max_sessions = LoadU16Le(q + 3);
  if (p.max_sessions == 0) return Status::InvalidArgument();
  return p;
}

size_t EncodeMcmcSessionStart(const McmcSessionStart& s, uint8_t* out) {
  compare::EncodeSessionStart(s.start, out);
  out[compare::kSessionStartBytes] = static_cast<uint8_t>(s.value);
  return kMcmcSessionStartBytes;
}

Result<McmcSessionStart> DecodeMcmcSessionStart(ConstByteSpan bytes) {
  if (bytes.size() != kMcmcSessionStartBytes) return Status::InvalidArgument();
  Result<compare::SessionStart> start = compare::DecodeSessionStart(bytes.first(compare::kSessionStartBytes));
  if (!start.ok()) return start.status();
  const uint8_t value = bytes[compare::kSessionStartBytes];
  if (value > static_cast<uint8_t>(McmcValue::kBeforeMove)) return Status::InvalidArgument();
  McmcSessionStart s;
  s.start = *start;
  s.value = static_cast<McmcValue>(value);
  return s;
}

Result<size_t> EncodeMcmcMoveDone(const McmcMoveDone& d, ByteSpan out) {
  if (out.size() < kMcmcMoveDoneBytes) return Status::ResourceExhausted();
  if (d.iteration == 0) return Status::InvalidArgument();
  StoreU32Le(d.iteration, out.data());
  out[4] = d.reverted ? 1 : 0;
  StoreU32Le(d.moved, out.data() + 5);
  return kMcmcMoveDoneBytes;
}

Result<McmcMoveDone> DecodeMcmcMoveDone(ConstByteSpan bytes) {
  if (bytes.size() != kMcmcMoveDoneBytes || (bytes[4] & ~1u) != 0) return Status::InvalidArgument();
  McmcMoveDone d;
  d.iteration = LoadU32Le(bytes.data());
  d.reverted = (bytes[4] & 1u) != 0;
  d.moved = LoadU32Le(bytes.data() + 5);
  if (d.iteration == 0) return Status::InvalidArgument();
  return d;
}

Result<size_t> EncodeMcmcSummary(const McmcSummary& s, ByteSpan out) {
  if (out.size() < kMcmcSummaryBytes) return Status::ResourceExhausted();
  const uint32_t fields[] = {s.workload,      s.greedy_workload,   s.uncovered,        s.moves,
                             s.reverts,       s.taken,             s.sessions_done,    s.sessions_aborted,
                             s.messages_sent, s.messages_received, s.rejected,         s.key_failures};
  static_assert(sizeof(fields) == kMcmcSummaryBytes, "one u32 per field");
  for (size_t i = 0; i < 12; ++i) StoreU32Le(fields[i], out.data() + 4 * i);
  return kMcmcSummaryBytes;
}

Result<McmcSummary> DecodeMcmcSummary(ConstByteSpan bytes) {
  if (bytes.size() != kMcmcSummaryBytes) return Status::InvalidArgument();
  McmcSummary s;
  uint32_t* fields[] = {&s.workload,      &s.greedy_workload,   &s.uncovered,     &s.moves,
                        &s.reverts,       &s.taken,             &s.sessions_done, &s.sessions_aborted,
                        &s.messages_sent, &s.messages_received, &s.rejected,      &s.key_failures};
  for (size_t i = 0; i < 12; ++i) *fields[i] = LoadU32Le(bytes.data() + 4 * i);
  return s;
}

Result<size_t> EncodeMcmcLeafMessage(const McmcLeafMessage& m, ByteSpan out) {
  if (out.size() < kMcmcLeafMessageBytes) return Status::ResourceExhausted();
  if (m.kind < McmcLeafKind::kGive || m.kind > McmcLeafKind::kReturned || m.iteration == 0) {
    return Status::InvalidArgument();
  }
  out[0] = static_cast<uint8_t>(McmcPlaintextType::kLeafMessage);
  out[1] = kMcmcVersion;
  out[2] = static_cast<uint8_t>(m.kind);
  StoreU32Le(m.iteration, out.data() + 3);
  return kMcmcLeafMessageBytes;
}

Result<McmcLeafMessage> DecodeMcmcLeafMessage(ConstByteSpan bytes) {
  if (bytes.size() != kMcmcLeafMessageBytes || bytes[0] != static_cast<uint8_t>(McmcPlaintextType::kLeafMessage) ||
      bytes[1] != kMcmcVersion) {
    return Status::InvalidArgument();
  }
  if (bytes[2] < static_cast<uint8_t>(McmcLeafKind::kGive) || bytes[2] > static_cast<uint8_t>(McmcLeafKind::kReturned)) {
    return Status::InvalidArgument();
  }
  McmcLeafMessage m;
  m.kind = static_cast<McmcLeafKind>(bytes[2]);
  m.iteration = LoadU32Le(bytes.data() + 3);
  if (m.iteration == 0) return Status::InvalidArgument();
  return m;
}

}  // namespace nodefl::lumos
