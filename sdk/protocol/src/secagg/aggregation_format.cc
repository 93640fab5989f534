// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/secagg/aggregation_format.h"

namespace nodefl::secagg {
namespace {

void StoreWords(const uint64_t (&words)[kShareWords], uint8_t* out) {
  for (size_t i = 0; i < kShareWords; ++i) StoreU64Le(words[i], out + 8 * i);
}

void LoadWords(const uint8_t* in, uint64_t (&words)[kShareWords]) {
  for (size_t i = 0; i < kShareWords; ++i) words[i] = LoadU64Le(in + 8 * i);
}

}  // namespace

void EncodeAggStart(const AggStart& s, uint8_t (&out)[kAggStartBytes]) {
  StoreU32Le(s.aggregation, out);
  StoreU64Le(s.round, out + 4);
  StoreU32Le(s.length, out + 12);
  StoreU32Le(s.peer_count, out + 16);
  StoreU16Le(s.threshold, out + 20);
  out[22] = static_cast<uint8_t>(s.mode);
}

Result<AggStart> DecodeAggStart(ConstByteSpan bytes) {
  if (bytes.size() != kAggStartBytes) return Status::InvalidArgument();
  AggStart s;
  s.aggregation = LoadU32Le(bytes.data());
  s.round = LoadU64Le(bytes.data() + 4);
  s.length = LoadU32Le(bytes.data() + 12);
  s.peer_count = LoadU32Le(bytes.data() + 16);
  s.threshold = LoadU16Le(bytes.data() + 20);
  if (bytes[22] > static_cast<uint8_t>(AggMode::kPaper)) return Status::InvalidArgument();
  s.mode = static_cast<AggMode>(bytes[22]);
  if (s.aggregation == 0 || s.length == 0 || s.length > kMaxAggLength) return Status::InvalidArgument();
  if (s.peer_count == 0 || s.peer_count > kMaxAggPeers) return Status::InvalidArgument();
  if (s.mode == AggMode::kRobust && (s.threshold == 0 || s.threshold > s.peer_count)) {
    return Status::InvalidArgument();
  }
  if (s.mode == AggMode::kPaper && s.threshold != 0) return Status::InvalidArgument();
  return s;
}

Result<size_t> EncodeAggRun(uint32_t aggregation, uint32_t offset, Span<const uint32_t> values, ByteSpan out) {
  const size_t need = 8 + 4 * values.size();
  if (out.size() < need) return Status::OutOfRange();
  StoreU32Le(aggregation, out.data());
  StoreU32Le(offset, out.data() + 4);
  for (size_t i = 0; i < values.size(); ++i) StoreU32Le(values[i], out.data() + 8 + 4 * i);
  return need;
}

Result<AggRun> DecodeAggRun(ConstByteSpan bytes) {
  if (bytes.size() < 12 || (bytes.size() - 8) % 4 != 0) return Status::InvalidArgument();
  AggRun r;
  r.aggregation = LoadU32Le(bytes.data());
  r.offset = LoadU32Le(bytes.data() + 4);
  r.values = bytes.subspan(8);
  return r;
}

Result<size_t> EncodeAggKey(const AggKey& k, uint32_t peers, ByteSpan out) {
  const size_t size = AggKeyBytes(peers);
  if (out.size() < size) return Status::OutOfRange();
  StoreU32Le(k.aggregation, out.data());
  for (size_t i = 0; i < kAggPublicKeyBytes; ++i) out[4 + i] = k.public_key[i];
  StoreU32Le(k.shared_with, out.data() + 4 + kAggPublicKeyBytes);
  for (size_t i = kAggKeyHeaderBytes; i < size; ++i) out[i] = 0;
  return size;
}

Result<AggKey> DecodeAggKey(ConstByteSpan bytes, uint32_t peers) {
  if (bytes.size() != AggKeyBytes(peers)) return Status::InvalidArgument();
  AggKey k;
  k.aggregation = LoadU32Le(bytes.data());
  for (size_t i = 0; i < kAggPublicKeyBytes; ++i) k.public_key[i] = bytes[4 + i];
  k.shared_with = LoadU32Le(bytes.data() + 4 + kAggPublicKeyBytes);
  uint32_t set = 0;
  for (uint32_t i = 0; i < 8 * static_cast<uint32_t>(bytes.size() - kAggKeyHeaderBytes); ++i) {
    if (!AggKeyReached(bytes, i)) continue;
    if (i >= peers) return Status::InvalidArgument();  // padding
    ++set;
  }
  if (set != k.shared_with) return Status::InvalidArgument();
  return k;
}

size_t EncodeAggSharesHeader(uint32_t aggregation, uint16_t count, uint8_t* out) {
  StoreU32Le(aggregation, out);
  StoreU16Le(count, out + 4);
  return kAggSharesHeaderBytes;
}

size_t EncodeRevealedShare(const RevealedShare& s, uint8_t* out) {
  StoreU32Le(s.peer, out);
  out[4] = static_cast<uint8_t>(s.code);
  StoreWords(s.y, out + 5);
  return kRevealedShareBytes;
}

Result<AggSharesView> DecodeAggShares(ConstByteSpan bytes) {
  if (bytes.size() < kAggSharesHeaderBytes) return Status::InvalidArgument();
  AggSharesView v;
  v.aggregation = LoadU32Le(bytes.data());
  v.count = LoadU16Le(bytes.data() + 4);
  if (v.count == 0 || bytes.size() != kAggSharesHeaderBytes + size_t{v.count} * kRevealedShareBytes) {
    return Status::InvalidArgument();
  }
  v.entries = bytes.subspan(kAggSharesHeaderBytes);
  return v;
}

Result<RevealedShare> RevealedShareAt(const AggSharesView& view, uint16_t i) {
  if (i >= view.count) return Status::OutOfRange();
  const uint8_t* p = view.entries.data() + size_t{i} * kRevealedShareBytes;
  RevealedShare s;
  s.peer = LoadU32Le(p);
  if (p[4] != static_cast<uint8_t>(RevealCode::kSelfSeed) && p[4] != static_cast<uint8_t>(RevealCode::kRoundSecret)) {
    return Status::InvalidArgument();
  }
  s.code = static_cast<RevealCode>(p[4]);
  LoadWords(p + 5, s.y);
  return s;
}

void EncodeAggAbort(uint32_t aggregation, uint8_t code, uint8_t (&out)[kAggAbortBytes]) {
  StoreU32Le(aggregation, out);
  out[4] = code;
}

Result<AggAbort> DecodeAggAbort(ConstByteSpan bytes) {
  if (bytes.size() != kAggAbortBytes) return Status::InvalidArgument();
  AggAbort a;
  a.aggregation = LoadU32Le(bytes.data());
  a.code = bytes[4];
  return a;
}

void EncodeAggPeerMessage(const AggPeerMessage& m, uint8_t (&out)[kAggPeerMessageBytes]) {
  out[0] = kAggPeerMessageTag;
  StoreU32Le(m.aggregation, out + 1);
  StoreU64Le(m.round, out + 5);
  for (size_t i = 0; i < kAggPublicKeyBytes; ++i) out[13 + i] = m.public_key[i];
  uint8_t* q = out + 13 + kAggPublicKeyBytes;
  q[0] = m.has_shares ? 1 : 0;
  if (m.has_shares) {
    StoreWords(m.self_seed, q + 1);
    StoreWords(m.round_secret, q + 1 + kShareBytes);
  } else {
    for (size_t i = 0; i < 2 * kShareBytes; ++i) q[1 + i] = 0;
  }
}

Result<AggPeerMessage> DecodeAggPeerMessage(ConstByteSpan bytes) {
  if (bytes.size() != kAggPeerMessageBytes || bytes[0] != kAggPeerMessageTag) return Status::InvalidArgument();
  AggPeerMessage m;
  m.aggregation = LoadU32Le(bytes.data() + 1);
  m.round = LoadU64Le(bytes.data() + 5);
  for (size_t i = 0; i < kAggPublicKeyBytes; ++i) m.public_key[i] = bytes[13 + i];
  const uint8_t* q = bytes.data() + 13 + kAggPublicKeyBytes;
  if (q[0] > 1) return Status::InvalidArgument();
  m.has_shares = q[0] == 1;
  if (m.has_shares) {
    LoadWords(q + 1, m.self_seed);
    LoadWords(q + 1 + kShareBytes, m.round_secret);
  }
  return m;
}

}  // namespace nodefl::secagg
