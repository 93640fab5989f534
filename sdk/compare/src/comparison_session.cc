// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/comparison_session.h"

#include <mbedtls/platform_util.h>

#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/sha256.h"
#include "nodefl/ot/ot_hash.h"

namespace nodefl::compare {

namespace {

constexpr uint64_t Bit(uint64_t word, uint32_t i) { return (word >> i) & 1u; }

uint32_t GetBits2(const uint8_t* bytes, uint32_t bit) {
  return ((bytes[bit / 8] >> (bit % 8)) & 1u) | (((bytes[(bit + 1) / 8] >> ((bit + 1) % 8)) & 1u) << 1);
}

void PutBit(uint8_t* bytes, uint32_t bit, uint64_t value) {
  if (value & 1u) bytes[bit / 8] = static_cast<uint8_t>(bytes[bit / 8] | (1u << (bit % 8)));
}

}  // namespace

ComparisonSession::ComparisonSession() {
  mbedtls_aes_init(&aes_);
  mbedtls_sha256_init(&sent_digest_);
  mbedtls_sha256_init(&received_digest_);
}

ComparisonSession::ComparisonSession(const ComparisonStorage& storage) : ComparisonSession() {
  slots_ = storage.slots;
  tables_ = storage.tables;
}

Status ComparisonSession::SetStorage(const ComparisonStorage& storage) {
  if (state_ == State::kRunning) return Status::FailedPrecondition();
  slots_ = storage.slots;
  tables_ = storage.tables;
  return Status::Ok();
}

ComparisonSession::~ComparisonSession() {
  mbedtls_aes_free(&aes_);
  mbedtls_sha256_free(&sent_digest_);
  mbedtls_sha256_free(&received_digest_);
  mbedtls_platform_zeroize(digit_keys0_, sizeof(digit_keys0_));
  mbedtls_platform_zeroize(digit_keys1_, sizeof(digit_keys1_));
  mbedtls_platform_zeroize(keys0_, sizeof(keys0_));
  mbedtls_platform_zeroize(keys1_, sizeof(keys1_));
}

Status ComparisonSession::Start(Role role, const RunShape& shape, const ot::OtTag& tag, Span<const uint32_t> values,
                                crypto::RandomFunction random, void* random_context) {
  NODEFL_TRY(CheckShape(shape));
  if (random == nullptr || values.size() != shape.count || slots_.size() < shape.count) {
    return Status::InvalidArgument();
  }
  if (role == Role::kA && tables_.size() < uint64_t{shape.count} * shape.plan.table_bytes()) {
    return Status::InvalidArgument();
  }
  for (uint32_t v : values) {
    if (v > shape.plan.MaxValue()) return Status::InvalidArgument();
  }
  role_ = role;
  shape_ = shape;
  tag_ = tag;
  random_ = random;
  random_context_ = random_context;
  for (uint32_t i = 0; i < shape.count; ++i) {
    slots_[i] = ComparisonSlot();
    slots_[i].value = values[i];
  }
  own_.Init(shape, role);
  peer_.Init(shape, role == Role::kA ? Role::kB : Role::kA);
  levels_ready_ = level_progress_ = outputs_received_ = 0;
  ots_done_ = 0;
  iknp_base_begun_ = false;
  counters_ = Counters();
  abort_reason_ = Status::Ok();
  abort_notice_due_ = false;
  base_sender_.Clear();
  base_receiver_.Clear();
  iknp_sender_.Clear();
  iknp_receiver_.Clear();
  if (crypto::sha256::Starts(&sent_digest_) != 0 || crypto::sha256::Starts(&received_digest_) != 0) {
    return Status::Internal();
  }
  state_ = State::kRunning;
  return Status::Ok();
}

Status ComparisonSession::Fail(Status reason) {
  if (state_ == State::kRunning) {
    state_ = State::kAborted;
    abort_reason_ = reason;
  }
  return reason;
}

void ComparisonSession::Abort(Status reason) {
  if (state_ != State::kRunning) return;
  (void)Fail(reason.ok() ? Status::Aborted() : reason);
  abort_notice_due_ = true;
}

// --- readiness and writing ----------------------------------------------------

bool ComparisonSession::Ready(const MessageSpec& spec) const {
  switch (spec.type) {
    case MessageType::kBasePoint:
      return true;
    case MessageType::kBasePoints:
      // Base mode: B's points answer A's point. IKNP: A's base-OT points
      // answer B's point.
      return shape_.mode == OtMode::kBase ? base_receiver_.begun() : iknp_base_begun_;
    case MessageType::kExtension:
      return iknp_receiver_.ready();
    case MessageType::kTables:
      return ots_done_ >= uint64_t{spec.first + spec.count} * shape_.plan.ots || ots_done_ >= shape_.total_ots();
    case MessageType::kOpenings:
      return levels_ready_ >= spec.level;  // shares of level - 1 complete
    case MessageType::kOutput:
      return levels_ready_ >= uint32_t{shape_.plan.depth} + 1;
    case MessageType::kAbort:
      return false;
  }
  return false;
}

Result<size_t> ComparisonSession::NextMessage(ByteSpan out) {
  if (state_ == State::kAborted) {
    if (!abort_notice_due_) return size_t{0};
    if (out.size() < kMessageHeaderBytes) return Status::InvalidArgument();
    abort_notice_due_ = false;
    for (size_t i = 0; i < kMessageHeaderBytes; ++i) out[i] = 0;
    out[0] = kMessageVersion;
    out[1] = static_cast<uint8_t>(MessageType::kAbort);
    StoreU16Le(static_cast<uint16_t>(own_.sent()), out.data() + 2);
    return kMessageHeaderBytes;
  }
  if (state_ != State::kRunning || own_.done()) return size_t{0};
  if (out.size() < shape_.max_message_bytes) return Status::InvalidArgument();
  const MessageSpec spec = own_.Current();
  if (!Ready(spec)) return size_t{0};
  uint8_t* m = out.data();
  m[0] = kMessageVersion;
  m[1] = static_cast<uint8_t>(spec.type);
  StoreU16Le(static_cast<uint16_t>(own_.sent()), m + 2);
  m[4] = spec.level;
  StoreU32Le(spec.first, m + 5);
  StoreU16Le(static_cast<uint16_t>(spec.count), m + 9);
  for (uint32_t i = 0; i < spec.payload_bytes; ++i) m[kMessageHeaderBytes + i] = 0;
  if (Status st = Write(spec, m + kMessageHeaderBytes); !st.ok()) {
    Abort(st);
    return st;
  }
  const size_t size = kMessageHeaderBytes + spec.payload_bytes;
  if (spec.type != MessageType::kOutput && crypto::sha256::Update(&sent_digest_, m, size) != 0) {
    Abort(Status::Internal());
    return Status::Internal();
  }
  own_.Advance();
  counters_.bytes_sent += size;
  ++counters_.messages_sent;
  if (own_.done() && peer_.done() && levels_ready_ >= uint32_t{shape_.plan.depth} + 1) state_ = State::kDone;
  return size;
}

Status ComparisonSession::ChoiceBits(uint64_t first_ot, uint32_t count, uint8_t* bits) {
  uint8_t random_bits[ot::kIknpBlockOts / 8];
  if (random_(random_context_, random_bits, sizeof(random_bits)) != 0) return Status::Internal();
  const ComparisonPlan& p = shape_.plan;
  for (uint32_t k = 0; k < count; ++k) {
    const uint64_t g = first_ot + k;
    bool choice = false;
    if (g < shape_.total_ots()) {
      const uint32_t i = static_cast<uint32_t>(g / p.ots);
      const uint32_t o = static_cast<uint32_t>(g % p.ots);
      if (o < p.width) {
        // Digit d's bit b: bit b of the digit value (the digit is laid out
        // from its lowest bit).
        const uint32_t d = p.DigitOfOt(o);
        choice = ((p.Digit(slots_[i].value, d) >> (o - p.FirstOt(d))) & 1u) != 0;
      } else {
        choice = ot::GetBit(ConstByteSpan(random_bits, sizeof(random_bits)), k % (8 * sizeof(random_bits)));
      }
    }
    ot::SetBit(ByteSpan(bits, ot::BitBytes(count)), k, choice);
  }
  mbedtls_platform_zeroize(random_bits, sizeof(random_bits));
  return Status::Ok();
}

Status ComparisonSession::Write(const MessageSpec& spec, uint8_t* payload) {
  const ComparisonPlan& p = shape_.plan;
  switch (spec.type) {
    case MessageType::kBasePoint: {
      const ByteSpan out(payload, ot::kOtPointBytes);
      if (shape_.mode == OtMode::kBase) return base_sender_.Start(tag_, random_, random_context_, out);
      return iknp_receiver_.StartBase(tag_, random_, random_context_, out);
    }
    case MessageType::kBasePoints: {
      const ByteSpan out(payload, spec.payload_bytes);
      if (shape_.mode == OtMode::kExtension) return iknp_sender_.WriteBasePoints(spec.first, spec.count, out);
      // Base mode, party B: choose, and keep the chosen keys.
      uint8_t choices[ot::kIknpBlockOts / 8];
      uint32_t done = 0;
      while (done < spec.count) {
        const uint32_t n = spec.count - done < ot::kIknpBlockOts ? spec.count - done : uint32_t{ot::kIknpBlockOts};
        const uint64_t first = uint64_t{spec.first} + done;
        NODEFL_TRY(ChoiceBits(first, n, choices));
        NODEFL_TRY(base_receiver_.Choose(ConstByteSpan(choices, sizeof(choices)), first,
                                         out.subspan(done * ot::kOtPointBytes, n * ot::kOtPointBytes),
                                         Span<ot::OtKey>(keys0_, n)));
        for (uint32_t k = 0; k < n; ++k) {
          NODEFL_TRY(ReceiverOt(first + k, ot::GetBit(ConstByteSpan(choices, sizeof(choices)), k), keys0_[k]));
        }
        done += n;
      }
      mbedtls_platform_zeroize(choices, sizeof(choices));
      return Status::Ok();
    }
    case MessageType::kExtension: {
      uint8_t choices[ot::kIknpBlockOts / 8];
      const uint64_t first = uint64_t{spec.first} * ot::kIknpBlockOts;
      NODEFL_TRY(ChoiceBits(first, ot::kIknpBlockOts, choices));
      NODEFL_TRY(iknp_receiver_.ExtendBlock(ConstByteSpan(choices, sizeof(choices)),
                                            ByteSpan(payload, ot::kIknpBlockBytes),
                                            Span<ot::OtKey>(keys0_, ot::kIknpBlockOts)));
      for (uint32_t k = 0; k < ot::kIknpBlockOts && first + k < shape_.total_ots(); ++k) {
        NODEFL_TRY(ReceiverOt(first + k, ot::GetBit(ConstByteSpan(choices, sizeof(choices)), k), keys0_[k]));
      }
      mbedtls_platform_zeroize(choices, sizeof(choices));
      return Status::Ok();
    }
    case MessageType::kTables: {
      const uint32_t bytes = p.table_bytes();
      for (uint32_t k = 0; k < spec.count * bytes; ++k) payload[k] = tables_[uint64_t{spec.first} * bytes + k];
      return Status::Ok();
    }
    case MessageType::kOpenings: {
      const uint32_t combinations = p.combinations[spec.level];
      const uint32_t first_and = p.first_and[spec.level];
      uint32_t bit = 0;
      for (uint32_t i = spec.first; i < spec.first + spec.count; ++i) {
        for (uint32_t j = first_and; j < first_and + 2 * combinations; ++j) {
          PutBit(payload, bit++, Bit(slots_[i].open_d, j));
          PutBit(payload, bit++, Bit(slots_[i].open_f, j));
        }
      }
      return Status::Ok();
    }
    case MessageType::kOutput: {
      const uint32_t share_bytes = (spec.count * 2 + 7) / 8;
      for (uint32_t i = spec.first; i < spec.first + spec.count; ++i) {
        const uint32_t bit = 2 * (i - spec.first);
        PutBit(payload, bit, Bit(slots_[i].gt, 0));
        PutBit(payload, bit + 1, Bit(slots_[i].eq, 0));
      }
      // The tag binds both directions of the transcript (by now this party
      // has sent and received every non-output message) and these shares:
      // a message changed on its way makes the two views differ, and each
      // party refuses the other's output.
      uint8_t sent[32], received[32];
      DigestOf(&sent_digest_, sent);
      DigestOf(&received_digest_, received);
      return OutputTag(own_.sent(), sent, received, payload, share_bytes, payload + share_bytes);
    }
    case MessageType::kAbort:
      break;
  }
  return Status::Internal();
}

// --- receiving ---------------------------------------------------------------

Status ComparisonSession::OnMessage(ConstByteSpan message) {
  if (state_ != State::kRunning) return Status::Ok();
  if (message.size() < kMessageHeaderBytes || message[0] != kMessageVersion) return Fail(Status::DataLoss());
  const uint8_t* m = message.data();
  const auto type = static_cast<MessageType>(m[1]);
  if (type == MessageType::kAbort) return Fail(Status::Aborted());
  if (peer_.done()) return Fail(Status::OutOfRange());
  const MessageSpec spec = peer_.Current();
  if (type != spec.type || LoadU16Le(m + 2) != static_cast<uint16_t>(peer_.sent()) || m[4] != spec.level ||
      LoadU32Le(m + 5) != spec.first || LoadU16Le(m + 9) != spec.count ||
      message.size() != kMessageHeaderBytes + spec.payload_bytes) {
    return Fail(Status::DataLoss());
  }
  if (Status st = Receive(spec, m + kMessageHeaderBytes); !st.ok()) {
    Abort(st);
    return st;
  }
  if (type != MessageType::kOutput && crypto::sha256::Update(&received_digest_, m, message.size()) != 0) {
    Abort(Status::Internal());
    return Status::Internal();
  }
  peer_.Advance();
  counters_.bytes_received += message.size();
  ++counters_.messages_received;
  if (own_.done() && peer_.done() && levels_ready_ >= uint32_t{shape_.plan.depth} + 1) state_ = State::kDone;
  return Status::Ok();
}

Status ComparisonSession::Receive(const MessageSpec& spec, const uint8_t* payload) {
  const ComparisonPlan& p = shape_.plan;
  switch (spec.type) {
    case MessageType::kBasePoint: {
      const ConstByteSpan point(payload, ot::kOtPointBytes);
      if (shape_.mode == OtMode::kBase) return base_receiver_.Begin(tag_, point, random_, random_context_);
      NODEFL_TRY(iknp_sender_.OnBasePoint(tag_, point, random_, random_context_));
      iknp_base_begun_ = true;
      return Status::Ok();
    }
    case MessageType::kBasePoints: {
      const ConstByteSpan points(payload, spec.payload_bytes);
      if (shape_.mode == OtMode::kExtension) return iknp_receiver_.OnBasePoints(points, spec.first);
      uint32_t done = 0;
      while (done < spec.count) {
        const uint32_t n = spec.count - done < ot::kIknpBlockOts ? spec.count - done : uint32_t{ot::kIknpBlockOts};
        const uint64_t first = uint64_t{spec.first} + done;
        NODEFL_TRY(base_sender_.Respond(points.subspan(done * ot::kOtPointBytes, n * ot::kOtPointBytes), first,
                                        Span<ot::OtKey>(keys0_, n), Span<ot::OtKey>(keys1_, n)));
        for (uint32_t k = 0; k < n; ++k) NODEFL_TRY(SenderOt(first + k, keys0_[k], keys1_[k]));
        done += n;
      }
      return Status::Ok();
    }
    case MessageType::kExtension: {
      NODEFL_TRY(iknp_sender_.OnBlock(ConstByteSpan(payload, ot::kIknpBlockBytes),
                                      Span<ot::OtKey>(keys0_, ot::kIknpBlockOts),
                                      Span<ot::OtKey>(keys1_, ot::kIknpBlockOts)));
      const uint64_t first = uint64_t{spec.first} * ot::kIknpBlockOts;
      for (uint32_t k = 0; k < ot::kIknpBlockOts && first + k < shape_.total_ots(); ++k) {
        NODEFL_TRY(SenderOt(first + k, keys0_[k], keys1_[k]));
      }
      return Status::Ok();
    }
    case MessageType::kTables: {
      // Party B: its entry of each digit's table, unmasked with its pad,
      // is its share of the digit's (gt, eq).
      if (levels_ready_ != 0 || ots_done_ < uint64_t{spec.first + spec.count} * p.ots) return Status::DataLoss();
      const uint32_t bytes = p.table_bytes();
      for (uint32_t i = spec.first; i < spec.first + spec.count; ++i) {
        ComparisonSlot& s = slots_[i];
        const uint8_t* table = payload + (i - spec.first) * bytes;
        for (uint32_t d = 0; d < p.digits; ++d) {
          const uint32_t v = p.Digit(s.value, d);
          const uint32_t entry = GetBits2(table, p.TableOffset(d) + 2 * v) ^ static_cast<uint32_t>((s.pads >> (2 * d)) & 3u);
          s.gt |= (entry & 1u) << d;
          s.eq |= ((entry >> 1) & 1u) << d;
        }
      }
      level_progress_ += spec.count;
      if (level_progress_ == shape_.count) LevelComplete();
      return Status::Ok();
    }
    case MessageType::kOpenings: {
      // Level `spec.level` needs this party's openings of it (computed
      // when the level below completed).
      if (levels_ready_ != spec.level) return Status::DataLoss();
      const uint32_t combinations = p.combinations[spec.level];
      const uint32_t first_and = p.first_and[spec.level];
      uint32_t bit = 0;
      for (uint32_t i = spec.first; i < spec.first + spec.count; ++i) {
        uint64_t peer_d = 0, peer_f = 0;
        for (uint32_t j = first_and; j < first_and + 2 * combinations; ++j) {
          peer_d |= uint64_t{(payload[bit / 8] >> (bit % 8)) & 1u} << j;
          ++bit;
          peer_f |= uint64_t{(payload[bit / 8] >> (bit % 8)) & 1u} << j;
          ++bit;
        }
        ApplyOpenings(slots_[i], spec.level, peer_d, peer_f);
      }
      level_progress_ += spec.count;
      if (level_progress_ == shape_.count) LevelComplete();
      return Status::Ok();
    }
    case MessageType::kOutput: {
      if (levels_ready_ < uint32_t{p.depth} + 1) return Status::DataLoss();
      const uint32_t share_bytes = (spec.count * 2 + 7) / 8;
      // The peer's sent messages are this party's received ones.
      uint8_t sent[32], received[32];
      DigestOf(&sent_digest_, sent);
      DigestOf(&received_digest_, received);
      uint8_t expected[kOutputTagBytes];
      NODEFL_TRY(OutputTag(peer_.sent(), received, sent, payload, share_bytes, expected));
      uint8_t diff = 0;
      for (size_t k = 0; k < kOutputTagBytes; ++k) diff = static_cast<uint8_t>(diff | (expected[k] ^ payload[share_bytes + k]));
      if (diff != 0) return Status::DataLoss();
      for (uint32_t i = spec.first; i < spec.first + spec.count; ++i) {
        const uint32_t peer = GetBits2(payload, 2 * (i - spec.first));
        ComparisonSlot& s = slots_[i];
        s.result = static_cast<uint8_t>(((Bit(s.gt, 0) | (Bit(s.eq, 0) << 1)) ^ peer) & 3u);
      }
      outputs_received_ += spec.count;
      return Status::Ok();
    }
    case MessageType::kAbort:
      break;
  }
  return Status::DataLoss();
}

// --- OT results ------------------------------------------------------------------

// The 1-out-of-2^w OT of a digit (Naor-Pinkas style): entry v of A's table
// is masked with XOR over the digit's bits b of G(K_b^{v_b})[v], where
// K_b^0, K_b^1 are the two keys of the digit's b-th random OT and G(K)[v]
// is the 2-bit field v of the AES-128-CTR stream keyed by K. B holds
// K_b^{y_b} for every b and so unmasks entry y only: any other v differs
// from y in some bit b, whose stream B cannot compute.
Status ComparisonSession::MaskStream(const ot::OtKey& key, uint32_t first_bit, uint32_t bits, uint8_t* out) {
  // Blocks of 128 bits; `out` gets bits [first_bit, first_bit + bits) of
  // the stream, rounded out to whole blocks (caller sizes for that).
  if (mbedtls_aes_setkey_enc(&aes_, key.bytes, 128) != 0) return Status::Internal();
  const uint32_t first_block = first_bit / 128, last_block = (first_bit + bits - 1) / 128;
  for (uint32_t block = first_block; block <= last_block; ++block) {
    uint8_t counter[16] = {'n', 'o', 'd', 'e', 'f', 'l', '-', 't', 'a', 'b', 'l', 'e'};
    StoreU32Le(block, counter + 12);
    if (mbedtls_aes_crypt_ecb(&aes_, MBEDTLS_AES_ENCRYPT, counter, out + 16 * (block - first_block)) != 0) {
      return Status::Internal();
    }
  }
  return Status::Ok();
}

Status ComparisonSession::BuildTable(uint32_t i, uint32_t d) {
  const ComparisonPlan& p = shape_.plan;
  ComparisonSlot& s = slots_[i];
  uint8_t mask = 0;
  if (random_(random_context_, &mask, 1) != 0) return Status::Internal();
  mask &= 3u;
  // A's share of digit d: its random mask.
  s.gt |= uint32_t{mask & 1u} << d;
  s.eq |= uint32_t{(mask >> 1) & 1u} << d;
  const uint32_t x = p.Digit(s.value, d);
  const uint32_t w = p.DigitBits(d);
  const uint32_t entries = 1u << w;
  uint8_t* table = tables_.data() + uint64_t{i} * p.table_bytes();
  const uint32_t offset = p.TableOffset(d);
  // Plain entries first ([x > v], [x = v], masked with A's share) ...
  uint8_t plain[2 * (1u << kMaxDigitBits) / 8] = {};
  for (uint32_t v = 0; v < entries; ++v) {
    const uint32_t entry = (uint32_t{x > v} | (uint32_t{x == v} << 1)) ^ mask;
    plain[(2 * v) / 8] = static_cast<uint8_t>(plain[(2 * v) / 8] | (entry << ((2 * v) % 8)));
  }
  // ... then one pad stream per bit and key value.
  uint8_t stream0[sizeof(plain)], stream1[sizeof(plain)];
  const uint32_t stream_bits = 2 * entries;
  for (uint32_t b = 0; b < w; ++b) {
    NODEFL_TRY(MaskStream(digit_keys0_[b], 0, stream_bits, stream0));
    NODEFL_TRY(MaskStream(digit_keys1_[b], 0, stream_bits, stream1));
    for (uint32_t v = 0; v < entries; ++v) {
      const uint8_t* stream = ((v >> b) & 1u) ? stream1 : stream0;
      const uint32_t field = (stream[(2 * v) / 8] >> ((2 * v) % 8)) & 3u;
      plain[(2 * v) / 8] = static_cast<uint8_t>(plain[(2 * v) / 8] ^ (field << ((2 * v) % 8)));
    }
  }
  for (uint32_t v = 0; v < entries; ++v) {
    const uint32_t entry = (plain[(2 * v) / 8] >> ((2 * v) % 8)) & 3u;
    const uint32_t bit = offset + 2 * v;
    table[bit / 8] = static_cast<uint8_t>((table[bit / 8] & ~(3u << (bit % 8))) | (entry << (bit % 8)));
  }
  mbedtls_platform_zeroize(stream0, sizeof(stream0));
  mbedtls_platform_zeroize(stream1, sizeof(stream1));
  return Status::Ok();
}

Status ComparisonSession::ReceiverPad(uint32_t y, uint32_t w, uint8_t* pad) {
  uint32_t field = 0;
  uint8_t block[16];
  for (uint32_t b = 0; b < w; ++b) {
    NODEFL_TRY(MaskStream(digit_keys0_[b], 2 * y, 2, block));
    const uint32_t bit = (2 * y) % 128;
    field ^= (block[bit / 8] >> (bit % 8)) & 3u;
  }
  mbedtls_platform_zeroize(block, sizeof(block));
  *pad = static_cast<uint8_t>(field);
  return Status::Ok();
}

Status ComparisonSession::SenderOt(uint64_t g, const ot::OtKey& k0, const ot::OtKey& k1) {
  if (g != ots_done_) return Status::Internal();
  const ComparisonPlan& p = shape_.plan;
  const uint32_t i = static_cast<uint32_t>(g / p.ots);
  const uint32_t o = static_cast<uint32_t>(g % p.ots);
  ComparisonSlot& s = slots_[i];
  if (o < p.width) {
    const uint32_t d = p.DigitOfOt(o);
    const uint32_t b = o - p.FirstOt(d);
    digit_keys0_[b] = k0;
    digit_keys1_[b] = k1;
    if (b + 1 == p.DigitBits(d)) NODEFL_TRY(BuildTable(i, d));
  } else {
    // Random OT -> XOR shares of u * c: A takes u = x0 ^ x1 and x0, B gets
    // x_c; triple AND t uses two of them (docs/secure-comparison.md).
    const uint32_t t = (o - p.width) / 2;
    const uint64_t x0 = k0.bytes[0] & 1u, x1 = k1.bytes[0] & 1u, u = x0 ^ x1;
    if ((o - p.width) % 2 == 0) {
      s.a |= u << t;
      s.c ^= x0 << t;
    } else {
      s.b |= u << t;
      s.c ^= (x0 ^ (u & Bit(s.a, t))) << t;
    }
  }
  ++ots_done_;
  if (ots_done_ == shape_.total_ots()) LevelComplete();  // A's level-0 shares are its masks
  return Status::Ok();
}

Status ComparisonSession::ReceiverOt(uint64_t g, bool choice, const ot::OtKey& key) {
  if (g != ots_done_) return Status::Internal();
  const ComparisonPlan& p = shape_.plan;
  const uint32_t i = static_cast<uint32_t>(g / p.ots);
  const uint32_t o = static_cast<uint32_t>(g % p.ots);
  ComparisonSlot& s = slots_[i];
  if (o < p.width) {
    const uint32_t d = p.DigitOfOt(o);
    const uint32_t b = o - p.FirstOt(d);
    digit_keys0_[b] = key;
    if (b + 1 == p.DigitBits(d)) {
      uint8_t pad = 0;
      NODEFL_TRY(ReceiverPad(p.Digit(s.value, d), p.DigitBits(d), &pad));
      s.pads |= uint64_t{pad} << (2 * d);
    }
  } else {
    const uint32_t t = (o - p.width) / 2;
    const uint64_t c = choice ? 1u : 0u, x = key.bytes[0] & 1u;
    if ((o - p.width) % 2 == 0) {
      s.b |= c << t;
      s.c ^= x << t;
    } else {
      s.a |= c << t;
      s.c ^= (x ^ (c & Bit(s.b, t))) << t;
    }
  }
  ++ots_done_;
  return Status::Ok();
}

// --- the AND tree ---------------------------------------------------------------

void ComparisonSession::ComputeOpenings(ComparisonSlot& s, uint32_t level) const {
  // Every level has its own AND indices, so the openings of all levels
  // live side by side: this level's may still be unsent when the next
  // level's are computed.
  const ComparisonPlan& p = shape_.plan;
  for (uint32_t c = 0; c < p.combinations[level]; ++c) {
    const uint32_t j = p.first_and[level] + 2 * c;
    const uint64_t e_high = Bit(s.eq, 2 * c), g_low = Bit(s.gt, 2 * c + 1), e_low = Bit(s.eq, 2 * c + 1);
    // AND j: e_high & g_low; AND j + 1: e_high & e_low.
    s.open_d |= ((e_high ^ Bit(s.a, j)) << j) | ((e_high ^ Bit(s.a, j + 1)) << (j + 1));
    s.open_f |= ((g_low ^ Bit(s.b, j)) << j) | ((e_low ^ Bit(s.b, j + 1)) << (j + 1));
  }
}

void ComparisonSession::ApplyOpenings(ComparisonSlot& s, uint32_t level, uint64_t peer_d, uint64_t peer_f) const {
  const ComparisonPlan& p = shape_.plan;
  const uint64_t d_all = s.open_d ^ peer_d, f_all = s.open_f ^ peer_f;
  auto and_share = [&](uint32_t j) -> uint64_t {
    const uint64_t d = Bit(d_all, j), f = Bit(f_all, j);
    uint64_t z = Bit(s.c, j) ^ (d & Bit(s.b, j)) ^ (f & Bit(s.a, j));
    if (is_a()) z ^= d & f;
    return z;
  };
  uint32_t gt = 0, eq = 0;
  const uint32_t combinations = p.combinations[level];
  for (uint32_t c = 0; c < combinations; ++c) {
    const uint32_t j = p.first_and[level] + 2 * c;
    gt |= static_cast<uint32_t>((Bit(s.gt, 2 * c) ^ and_share(j)) << c);
    eq |= static_cast<uint32_t>(and_share(j + 1) << c);
  }
  const uint32_t nodes = p.nodes_before[level];
  if (nodes % 2 == 1) {  // the odd node moves up unchanged
    gt |= static_cast<uint32_t>(Bit(s.gt, nodes - 1) << combinations);
    eq |= static_cast<uint32_t>(Bit(s.eq, nodes - 1) << combinations);
  }
  s.gt = gt;
  s.eq = eq;
}

void ComparisonSession::LevelComplete() {
  ++levels_ready_;
  level_progress_ = 0;
  const uint32_t next = levels_ready_;  // the level whose openings are due
  if (next <= shape_.plan.depth) {
    for (uint32_t i = 0; i < shape_.count; ++i) ComputeOpenings(slots_[i], next);
  } else if (!shape_.reveal) {
    for (uint32_t i = 0; i < shape_.count; ++i) {
      slots_[i].result = static_cast<uint8_t>(Bit(slots_[i].gt, 0) | (Bit(slots_[i].eq, 0) << 1));
    }
  }
}

// --- transcript ------------------------------------------------------------------

void ComparisonSession::DigestOf(mbedtls_sha256_context* context, uint8_t* out) const {
  mbedtls_sha256_context copy;
  mbedtls_sha256_init(&copy);
  mbedtls_sha256_clone(&copy, context);
  if (crypto::sha256::Finish(&copy, out) != 0) {
    for (int k = 0; k < 32; ++k) out[k] = 0;
  }
  mbedtls_sha256_free(&copy);
}

Status ComparisonSession::OutputTag(uint32_t sequence, const uint8_t* by_sender, const uint8_t* to_sender,
                                    const uint8_t* shares, size_t n, uint8_t* tag) const {
  ot::KeyHash h(ot::HashDomain::kTranscript, tag_, sequence);
  h.Add(ConstByteSpan(by_sender, 32));
  h.Add(ConstByteSpan(to_sender, 32));
  h.Add(ConstByteSpan(shares, n));
  return h.Finish(ByteSpan(tag, kOutputTagBytes));
}

}  // namespace nodefl::compare
