// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/lumos/trim_format.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::lumos {

Result<size_t> EncodeTrimParameters(const TrimRoundParameters& p, ByteSpan out) {
  if (out.size() < kTrimParametersBytes) return Status::ResourceExhausted();
  if (p.phase != TrimPhase::kReady && p.phase != TrimPhase::kDrain && p.phase != TrimPhase::kReport) {
    return Status::InvalidArgument();
  }
  if (p.phase == TrimPhase::kDrain && p.step == 0) return Status::InvalidArgument();
  out[0] = kTrimVersion;
  out[1] = static_cast<uint8_t>(p.phase);
  out[2] = p.upload_kept ? 1 : 0;
  StoreU32Le(p.threshold, out.data() + 3);
  StoreU32Le(p.step, out.data() + 7);
  return kTrimParametersBytes;
}

Result<TrimRoundParameters> DecodeTrimParameters(ConstByteSpan bytes) {
  if (bytes.size() != kTrimParametersBytes || bytes[0] != kTrimVersion) return Status::InvalidArgument();
  TrimRoundParameters p;
  const uint8_t phase = bytes[1];
  if (phase < static_cast<uint8_t>(TrimPhase::kReady) || phase > static_cast<uint8_t>(TrimPhase::kReport)) {
    return Status::InvalidArgument();
  }
  if ((bytes[2] & ~1u) != 0) return Status::InvalidArgument();
  p.phase = static_cast<TrimPhase>(phase);
  p.upload_kept = (bytes[2] & 1u) != 0;
  p.threshold = LoadU32Le(bytes.data() + 3);
  p.step = LoadU32Le(bytes.data() + 7);
  if (p.phase == TrimPhase::kDrain && p.step == 0) return Status::InvalidArgument();
  return p;
}

Result<size_t> EncodeTrimMessage(const TrimMessage& m, ByteSpan out) {
  if (out.size() < kTrimMessageBytes) return Status::ResourceExhausted();
  if (m.type != TrimMessageType::kSearch && m.type != TrimMessageType::kEcho) return Status::InvalidArgument();
  if (m.step == 0 || (m.type == TrimMessageType::kSearch && m.reverse)) return Status::InvalidArgument();
  out[0] = kTrimVersion;
  out[1] = static_cast<uint8_t>(m.type);
  out[2] = m.reverse ? 1 : 0;
  StoreU32Le(m.step, out.data() + 3);
  StoreU32Le(m.threshold, out.data() + 7);
  return kTrimMessageBytes;
}

Result<TrimMessage> DecodeTrimMessage(ConstByteSpan bytes) {
  if (bytes.size() != kTrimMessageBytes || bytes[0] != kTrimVersion) return Status::InvalidArgument();
  if (bytes[1] != static_cast<uint8_t>(TrimMessageType::kSearch) &&
      bytes[1] != static_cast<uint8_t>(TrimMessageType::kEcho)) {
    return Status::InvalidArgument();
  }
  if ((bytes[2] & ~1u) != 0) return Status::InvalidArgument();
  TrimMessage m;
  m.type = static_cast<TrimMessageType>(bytes[1]);
  m.reverse = (bytes[2] & 1u) != 0;
  m.step = LoadU32Le(bytes.data() + 3);
  m.threshold = LoadU32Le(bytes.data() + 7);
  if (m.step == 0 || (m.type == TrimMessageType::kSearch && m.reverse)) return Status::InvalidArgument();
  return m;
}

Result<size_t> EncodeTrimStepOutcome(const TrimStepOutcome& o, ByteSpan out) {
  if (out.size() < kTrimStepOutcomeBytes) return Status::ResourceExhausted();
  if (o.step == 0 || (!o.root && (o.still_over || o.relief != 0))) return Status::InvalidArgument();
  StoreU32Le(o.step, out.data());
  out[4] = static_cast<uint8_t>((o.root ? 1u : 0u) | (o.still_over ? 2u : 0u));
  StoreU32Le(o.relief, out.data() + 5);
  return kTrimStepOutcomeBytes;
}

Result<TrimStepOutcome> DecodeTrimStepOutcome(ConstByteSpan bytes) {
  if (bytes.size() != kTrimStepOutcomeBytes || (bytes[4] & ~3u) != 0) return Status::InvalidArgument();
  TrimStepOutcome o;
  o.step = LoadU32Le(bytes.data());
  o.root = (bytes[4] & 1u) != 0;
  o.still_over = (bytes[4] & 2u) != 0;
  o.relief = LoadU32Le(bytes.data() + 5);
  // Only a root can stay over the threshold or be relieved.
  if (o.step == 0 || (!o.root && (o.still_over || o.relief != 0))) return Status::InvalidArgument();
  return o;
}

Result<size_t> EncodeTrimSummary(const TrimSummary& s, ByteSpan out) {
  if (out.size() < kTrimSummaryBytes) return Status::ResourceExhausted();
  const uint32_t fields[] = {s.workload,      s.greedy_workload,   s.uncovered, s.unkeyed,
                             s.unsettled,     s.messages_sent,     s.messages_received, s.rejected};
  for (size_t i = 0; i < 8; ++i) StoreU32Le(fields[i], out.data() + 4 * i);
  return kTrimSummaryBytes;
}

Result<TrimSummary> DecodeTrimSummary(ConstByteSpan bytes) {
  if (bytes.size() != kTrimSummaryBytes) return Status::InvalidArgument();
  TrimSummary s;
  uint32_t* fields[] = {&s.workload,  &s.greedy_workload, &s.uncovered,         &s.unkeyed,
                        &s.unsettled, &s.messages_sent,   &s.messages_received, &s.rejected};
  for (size_t i = 0; i < 8; ++i) *fields[i] = LoadU32Le(bytes.data() + 4 * i);
  return s;
}

}  // namespace nodefl::lumos
