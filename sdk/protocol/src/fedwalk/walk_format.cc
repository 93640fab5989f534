// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/fedwalk/walk_format.h"

#include <cmath>
#include <cstring>

#include "nodefl/core/little_endian.h"

namespace nodefl::fedwalk {
namespace {

constexpr size_t kReservedParameterBytes = 7;
constexpr size_t kSaltOffset = 32;
constexpr size_t kPredictorOffset = kSaltOffset + sizeof(WalkParameters::salt);
static_assert(kPredictorOffset + 1 + kReservedParameterBytes == kWalkParametersBytes,
              "the parameter layout must add up to kWalkParametersBytes");
static_assert(4 + kMaxStartWalksPerRecord * kStartWalkEntryBytes <= kMaxJobDataBytes,
              "a full kStartWalks record must fit in one JobData");
static_assert(WalkMessageBytes(kMaxWalkLength) <= kMaxJobDataBytes,
              "the longest walk's result must fit in one JobData");

bool KnownOutcome(uint8_t v) { return v <= static_cast<uint8_t>(WalkOutcome::kDropped); }

// Checks the u32 count of a count-prefixed record of `entry_bytes` entries.
Result<uint32_t> CountedRecord(ConstByteSpan record, size_t entry_bytes) {
  if (record.size() < 4) return Status::InvalidArgument();
  const uint32_t count = LoadU32Le(record.data());
  if (count < 1 || count > kMaxStartWalksPerRecord || record.size() != 4 + count * entry_bytes) {
    return Status::InvalidArgument();
  }
  return count;
}

}  // namespace

// ---- Parameters ----------------------------------------------------------------

const char* JumpPredictorName(JumpPredictor predictor) {
  switch (predictor) {
    case JumpPredictor::kTree:
      return "tree";
    case JumpPredictor::kNeighbours:
      return "neighbours";
  }
  return "?";
}

Result<JumpPredictor> ParseJumpPredictor(const char* name) {
  if (name == nullptr) return Status::InvalidArgument();
  for (uint8_t v = 0; v <= kMaxJumpPredictor; ++v) {
    const auto p = static_cast<JumpPredictor>(v);
    if (std::strcmp(name, JumpPredictorName(p)) == 0) return p;
  }
  return Status::InvalidArgument();
}

Status CheckWalkParameters(const WalkParameters& w) {
  const bool mode_ok = w.mode == PrivacyMode::kStrict || w.mode == PrivacyMode::kPaper;
  auto eps_ok = [](double e) { return std::isfinite(e) && e > 0; };
  // `!(p >= 0 && p <= 1)` also refuses NaN.
  if (!mode_ok || w.length < 2 || w.length > kMaxWalkLength || !(w.p >= 0.0 && w.p <= 1.0) ||
      !eps_ok(w.epsilon) || !eps_ok(w.epsilon_per_encoding) || w.max_pending_walks < 1 ||
      w.max_pending_walks > kMaxPendingWalks || static_cast<uint8_t>(w.predictor) > kMaxJumpPredictor) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Status EncodeWalkParameters(const WalkParameters& w, ByteSpan out) {
  if (out.size() < kWalkParametersBytes) return Status::InvalidArgument();
  NODEFL_TRY(CheckWalkParameters(w));
  uint8_t* o = out.data();
  o[0] = kWalkParametersVersion;
  o[1] = static_cast<uint8_t>(w.mode);
  StoreU16Le(w.length, o + 2);
  StoreU32Le(w.max_pending_walks, o + 4);
  StoreF64Le(w.p, o + 8);
  StoreF64Le(w.epsilon, o + 16);
  StoreF64Le(w.epsilon_per_encoding, o + 24);
  std::memcpy(o + kSaltOffset, w.salt, sizeof(w.salt));
  o[kPredictorOffset] = static_cast<uint8_t>(w.predictor);
  std::memset(o + kPredictorOffset + 1, 0, kReservedParameterBytes);
  return Status::Ok();
}

Result<WalkParameters> DecodeWalkParameters(ConstByteSpan bytes) {
  if (bytes.size() != kWalkParametersBytes) return Status::InvalidArgument();
  const uint8_t* in = bytes.data();
  if (in[0] != kWalkParametersVersion || in[1] > 1) return Status::InvalidArgument();
  for (size_t i = kWalkParametersBytes - kReservedParameterBytes; i < kWalkParametersBytes; ++i) {
    if (in[i] != 0) return Status::InvalidArgument();
  }
  WalkParameters w;
  w.mode = static_cast<PrivacyMode>(in[1]);
  w.length = LoadU16Le(in + 2);
  w.max_pending_walks = LoadU32Le(in + 4);
  w.p = LoadF64Le(in + 8);
  w.epsilon = LoadF64Le(in + 16);
  w.epsilon_per_encoding = LoadF64Le(in + 24);
  std::memcpy(w.salt, in + kSaltOffset, sizeof(w.salt));
  if (in[kPredictorOffset] > kMaxJumpPredictor) return Status::InvalidArgument();
  w.predictor = static_cast<JumpPredictor>(in[kPredictorOffset]);
  NODEFL_TRY(CheckWalkParameters(w));
  return w;
}

// ---- Walk message ----------------------------------------------------------------

Status CheckWalkHeader(const WalkHeader& h) {
  if ((h.flags & ~kSelfEncodeFirst) != 0 || h.remaining < 1 || WalkLength(h) > kMaxWalkLength) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Status EncodeWalkHeader(const WalkHeader& h, ByteSpan out) {
  if (out.size() < kWalkMessageHeaderBytes) return Status::InvalidArgument();
  NODEFL_TRY(CheckWalkHeader(h));
  uint8_t* o = out.data();
  o[0] = kWalkMessageVersion;
  o[1] = h.flags;
  StoreU16Le(h.remaining, o + 2);
  StoreU32Le(h.walk_id, o + 4);
  StoreU16Le(h.hops, o + 8);
  StoreU16Le(h.count, o + 10);
  return Status::Ok();
}

Result<WalkHeader> DecodeWalkMessage(ConstByteSpan message) {
  if (message.size() < kWalkMessageHeaderBytes) return Status::InvalidArgument();
  const uint8_t* in = message.data();
  if (in[0] != kWalkMessageVersion) return Status::InvalidArgument();
  WalkHeader h;
  h.flags = in[1];
  h.remaining = LoadU16Le(in + 2);
  h.walk_id = LoadU32Le(in + 4);
  h.hops = LoadU16Le(in + 8);
  h.count = LoadU16Le(in + 10);
  NODEFL_TRY(CheckWalkHeader(h));
  if (message.size() != PaddedWalkMessageBytes(h)) return Status::InvalidArgument();
  for (size_t i = WalkMessageBytes(h.count); i < message.size(); ++i) {
    if (in[i] != 0) return Status::InvalidArgument();
  }
  return h;
}

// ---- JobData records ---------------------------------------------------------------

Result<size_t> EncodeStartWalks(Span<const StartWalk> walks, ByteSpan out) {
  if (walks.empty() || walks.size() > kMaxStartWalksPerRecord) return Status::InvalidArgument();
  const size_t bytes = 4 + walks.size() * kStartWalkEntryBytes;
  for (const StartWalk& w : walks) {
    if (w.length < 1 || w.length > kMaxWalkLength) return Status::InvalidArgument();
  }
  if (out.size() < bytes) return Status::ResourceExhausted();
  StoreU32Le(static_cast<uint32_t>(walks.size()), out.data());
  for (size_t i = 0; i < walks.size(); ++i) {
    uint8_t* o = out.data() + 4 + i * kStartWalkEntryBytes;
    StoreU32Le(walks[i].walk_id, o);
    StoreU16Le(walks[i].length, o + 4);
    StoreU16Le(0, o + 6);
  }
  return bytes;
}

Result<uint32_t> DecodeStartWalks(ConstByteSpan record) {
  NODEFL_TRY_ASSIGN(const uint32_t count, CountedRecord(record, kStartWalkEntryBytes));
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* in = record.data() + 4 + i * kStartWalkEntryBytes;
    const uint16_t length = LoadU16Le(in + 4);
    if (length < 1 || length > kMaxWalkLength || LoadU16Le(in + 6) != 0) return Status::InvalidArgument();
  }
  return count;
}

StartWalk StartWalkAt(ConstByteSpan record, size_t i) {
  const uint8_t* in = record.data() + 4 + i * kStartWalkEntryBytes;
  return StartWalk{LoadU32Le(in), LoadU16Le(in + 4)};
}

Result<size_t> EncodeDroppedStarts(Span<const uint32_t> walk_ids, ByteSpan out) {
  if (walk_ids.empty() || walk_ids.size() > kMaxStartWalksPerRecord) return Status::InvalidArgument();
  const size_t bytes = 4 + 4 * walk_ids.size();
  if (out.size() < bytes) return Status::ResourceExhausted();
  StoreU32Le(static_cast<uint32_t>(walk_ids.size()), out.data());
  for (size_t i = 0; i < walk_ids.size(); ++i) StoreU32Le(walk_ids[i], out.data() + 4 + 4 * i);
  return bytes;
}

Result<uint32_t> DecodeDroppedStarts(ConstByteSpan record) { return CountedRecord(record, 4); }

Result<size_t> EncodeWalkResult(const WalkResultHeader& h, ConstByteSpan ids, ByteSpan out) {
  if (!KnownOutcome(static_cast<uint8_t>(h.outcome)) || h.count > kMaxWalkLength ||
      ids.size() != 4 * size_t{h.count}) {
    return Status::InvalidArgument();
  }
  const size_t bytes = kWalkResultHeaderBytes + ids.size();
  if (out.size() < bytes) return Status::ResourceExhausted();
  uint8_t* o = out.data();
  StoreU32Le(h.walk_id, o);
  o[4] = static_cast<uint8_t>(h.outcome);
  o[5] = 0;
  StoreU16Le(h.hops, o + 6);
  StoreU16Le(h.count, o + 8);
  StoreU16Le(0, o + 10);
  // memmove: a caller may encode a walk's result over the walk it holds.
  if (!ids.empty()) std::memmove(o + kWalkResultHeaderBytes, ids.data(), ids.size());
  return bytes;
}

Result<WalkResultHeader> DecodeWalkResult(ConstByteSpan record) {
  if (record.size() < kWalkResultHeaderBytes) return Status::InvalidArgument();
  const uint8_t* in = record.data();
  WalkResultHeader h;
  h.walk_id = LoadU32Le(in);
  h.hops = LoadU16Le(in + 6);
  h.count = LoadU16Le(in + 8);
  if (!KnownOutcome(in[4]) || in[5] != 0 || LoadU16Le(in + 10) != 0 || h.count > kMaxWalkLength ||
      record.size() != kWalkResultHeaderBytes + 4 * size_t{h.count}) {
    return Status::InvalidArgument();
  }
  h.outcome = static_cast<WalkOutcome>(in[4]);
  return h;
}

}  // namespace nodefl::fedwalk
