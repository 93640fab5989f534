// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/aggregation_client.h"

#include "nodefl/crypto/rng.h"

namespace nodefl::secagg {
namespace {

void CopyBytes(const uint8_t* from, size_t n, uint8_t* to) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
}

void ZeroBytes(void* p, size_t n) {
  volatile uint8_t* q = static_cast<volatile uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) q[i] = 0;
}

void CopyShareWords(const uint64_t (&from)[kShareWords], Share* to, uint64_t x) {
  to->x = x;
  for (size_t i = 0; i < kShareWords; ++i) to->y[i] = from[i];
}

}  // namespace

AggregationClient::AggregationClient(uint32_t own_id, const AggregationMemory& memory, Drbg& random)
    : own_id_(own_id), memory_(memory), random_(random) {}

void AggregationClient::Reset() {
  Wipe();
  state_ = State::kIdle;
  last_aggregation_ = 0;
  for (Early& e : early_) e.used = false;
}

void AggregationClient::Wipe() {
  keys_.Wipe();
  ZeroBytes(self_seed_.bytes, kSeedBytes);
  for (size_t i = 0; i < peer_count_ && i < memory_.peers.size(); ++i) {
    ZeroBytes(&memory_.peers[i].self_seed_share, sizeof(Share));
    ZeroBytes(&memory_.peers[i].round_secret_share, sizeof(Share));
  }
  ZeroBytes(memory_.shares.data(), memory_.shares.size() * sizeof(Share));
  pending_ = false;
}

bool AggregationClient::RecordFor(ConstByteSpan data) const {
  return data.size() >= 4 && state_ != State::kIdle && LoadU32Le(data.data()) == start_.aggregation;
}

Status AggregationClient::OnRecord(uint32_t kind, ConstByteSpan data) {
  Status s;
  switch (kind) {
    case kAggStart:
      s = OnStart(data);
      break;
    case kAggPeers:
      s = OnPeers(data);
      break;
    case kAggMaskSet:
      s = OnMaskSet(data);
      break;
    case kAggReveal:
      s = OnReveal(data);
      break;
    case kAggAbort:
      OnAbort(data);
      return Status::Ok();
    default:
      s = Status::InvalidArgument();
  }
  if (!s.ok()) ++stats_.records_refused;
  return s;
}

Status AggregationClient::OnStart(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(AggStart start, DecodeAggStart(data));
  // One at a time, each new: a repeated or older start (a replay) is refused.
  if (start.aggregation <= last_aggregation_) return Status::FailedPrecondition();
  if (start.peer_count > memory_.peers.size() || 2 * size_t{start.peer_count} > memory_.shares.size() ||
      start.peer_count > memory_.points.size() || start.length > memory_.vector.size()) {
    // Too big for this device: it leaves at once (the server sees a refusal).
    Wipe();
    start_ = start;
    last_aggregation_ = start.aggregation;
    peer_count_ = 0;
    state_ = State::kPeers;
    Refuse(Status::ResourceExhausted());
    return Status::Ok();
  }
  Wipe();
  start_ = start;
  last_aggregation_ = start.aggregation;
  peer_count_ = start.peer_count;
  peers_received_ = 0;
  input_set_ = false;
  cursor_ = 0;
  shared_with_ = 0;
  key_sent_ = false;
  refusal_ = Status::Ok();
  refuse_sent_ = false;
  for (uint32_t i = 0; i < peer_count_; ++i) memory_.peers[i] = AggregationPeer{};
  state_ = State::kPeers;
  return Status::Ok();
}

Status AggregationClient::OnPeers(ConstByteSpan data) {
  if (state_ != State::kPeers || !RecordFor(data)) return Status::FailedPrecondition();
  NODEFL_TRY_ASSIGN(AggRun run, DecodeAggRun(data));
  // Runs come in order; ids ascending, never our own.
  if (run.offset != peers_received_ || run.count() > peer_count_ - peers_received_) return Status::InvalidArgument();
  for (uint32_t i = 0; i < run.count(); ++i) {
    const uint32_t id = run.at(i);
    const uint32_t at = peers_received_ + i;
    if (id == own_id_ || (at > 0 && memory_.peers[at - 1].id >= id)) return Status::InvalidArgument();
    memory_.peers[at].id = id;
  }
  peers_received_ += run.count();
  if (peers_received_ == peer_count_) BeginSharing();
  return Status::Ok();
}

void AggregationClient::BeginSharing() {
  if (!keys_.Generate(&crypto::DrbgRandom, &random_).ok() ||
      !random_.Fill(Span<uint8_t>(self_seed_.bytes, kSeedBytes)).ok()) {
    Refuse(Status::Unavailable());
    return;
  }
  if (start_.mode == AggMode::kRobust) {
    for (uint32_t i = 0; i < peer_count_; ++i) memory_.points[i] = uint64_t{memory_.peers[i].id} + 1;
    const Span<const uint64_t> xs(memory_.points.data(), peer_count_);
    const Span<Share> self_shares(memory_.shares.data(), peer_count_);
    const Span<Share> secret_shares(memory_.shares.data() + peer_count_, peer_count_);
    if (!ShareSecret(ConstByteSpan(self_seed_.bytes, kSeedBytes), start_.threshold, xs, random_, self_shares).ok() ||
        !ShareSecret(keys_.secret(), start_.threshold, xs, random_, secret_shares).ok()) {
      Refuse(Status::Internal());
      return;
    }
  }
  state_ = State::kSharing;
  cursor_ = 0;
  // Messages that came before our start can be placed now.
  for (Early& e : early_) {
    if (!e.used) continue;
    Result<AggPeerMessage> m = DecodeAggPeerMessage(ConstByteSpan(e.bytes, kAggPeerMessageBytes));
    if (m.ok() && m.value().aggregation > start_.aggregation) continue;  // for a later one: keep
    e.used = false;
    if (!m.ok() || !AcceptPeerMessage(e.src, m.value()).ok()) ++stats_.messages_refused;
  }
}

Status AggregationClient::OnPeerMessage(uint32_t src, ConstByteSpan plaintext) {
  Result<AggPeerMessage> m = DecodeAggPeerMessage(plaintext);
  if (!m.ok()) {
    ++stats_.messages_refused;
    return m.status();
  }
  // Before our own start (or peer list) arrived: keep a few aside.
  if (m.value().aggregation > last_aggregation_ || (state_ == State::kPeers && m.value().aggregation == last_aggregation_)) {
    for (Early& e : early_) {
      if (e.used) continue;
      e.used = true;
      e.src = src;
      CopyBytes(plaintext.data(), kAggPeerMessageBytes, e.bytes);
      return Status::Ok();
    }
    ++stats_.early_dropped;
    return Status::ResourceExhausted();
  }
  const Status s = AcceptPeerMessage(src, m.value());
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) ++stats_.messages_refused;
  return s;
}

Status AggregationClient::AcceptPeerMessage(uint32_t src, const AggPeerMessage& m) {
  if (m.aggregation != start_.aggregation || m.round != start_.round) return Status::FailedPrecondition();
  if (state_ < State::kSharing || state_ > State::kMasking) return Status::FailedPrecondition();
  AggregationPeer* p = FindPeer(src);
  if (p == nullptr) return Status::NotFound();
  if (p->message_received) {
    ++stats_.replays;
    return Status::AlreadyExists();
  }
  if (m.has_shares != (start_.mode == AggMode::kRobust)) return Status::InvalidArgument();
  CopyBytes(m.public_key, kAggPublicKeyBytes, p->public_key);
  if (m.has_shares) {
    CopyShareWords(m.self_seed, &p->self_seed_share, uint64_t{own_id_} + 1);
    CopyShareWords(m.round_secret, &p->round_secret_share, uint64_t{own_id_} + 1);
  }
  p->message_received = true;
  return Status::Ok();
}

Status AggregationClient::OnMaskSet(ConstByteSpan data) {
  if (state_ != State::kAwaitMaskSet || !RecordFor(data)) return Status::FailedPrecondition();
  if (data.size() != MaskSetBytes(peer_count_)) return Status::InvalidArgument();
  // Padding bits past the list must be zero.
  for (uint32_t i = peer_count_; i < 8 * (data.size() - 4); ++i) {
    if (MaskSetBit(data, i)) return Status::InvalidArgument();
  }
  uint32_t members = 0;
  for (uint32_t i = 0; i < peer_count_; ++i) {
    AggregationPeer& p = memory_.peers[i];
    p.in_mask_set = MaskSetBit(data, i);
    if (!p.in_mask_set) continue;
    // The server cannot put a peer we never reached in our mask set: it
    // holds no shares of ours, so our secret could not be rebuilt.
    if (!p.reached) {
      Refuse(Status::InvalidArgument());
      return Status::Ok();
    }
    ++members;
  }
  const bool enough = start_.mode == AggMode::kRobust ? members >= start_.threshold : members == peer_count_;
  if (!enough) {
    Refuse(Status::FailedPrecondition());
    return Status::Ok();
  }
  state_ = State::kMasking;
  return Status::Ok();
}

Status AggregationClient::SetInput(Span<const uint32_t> codes) {
  if (state_ == State::kIdle || state_ > State::kMasking || input_set_) return Status::FailedPrecondition();
  if (codes.size() != start_.length) return Status::InvalidArgument();
  for (size_t i = 0; i < codes.size(); ++i) memory_.vector[i] = codes[i];
  input_set_ = true;
  return Status::Ok();
}

bool AggregationClient::MaskIfReady() {
  if (!input_set_) return false;
  for (uint32_t i = 0; i < peer_count_; ++i) {
    const AggregationPeer& p = memory_.peers[i];
    if (p.in_mask_set && !p.message_received) return false;
  }
  const Span<uint32_t> v(memory_.vector.data(), start_.length);
  if (start_.mode == AggMode::kRobust && !ApplyMask(self_seed_, start_.round, MaskSign::kAdd, v).ok()) {
    Refuse(Status::Internal());
    return false;
  }
  for (uint32_t i = 0; i < peer_count_; ++i) {
    const AggregationPeer& p = memory_.peers[i];
    if (!p.in_mask_set) continue;
    MaskSeed s;
    const Status derived = PairMaskSeed(keys_, own_id_, ConstByteSpan(p.public_key, kAggPublicKeyBytes), p.id,
                                        start_.round, &crypto::DrbgRandom, &random_, &s);
    const Status applied = derived.ok() ? ApplyMask(s, start_.round, PairSign(own_id_, p.id), v) : derived;
    ZeroBytes(s.bytes, kSeedBytes);
    if (!applied.ok()) {
      // A peer key that is not a point: nothing masked goes out.
      Refuse(applied);
      return false;
    }
  }
  // The server rebuilds what it needs from the peers' shares; ours are
  // no longer needed (forward secrecy of the masks).
  keys_.Wipe();
  ZeroBytes(self_seed_.bytes, kSeedBytes);
  ZeroBytes(memory_.shares.data(), memory_.shares.size() * sizeof(Share));
  state_ = State::kUploading;
  cursor_ = 0;
  return true;
}

Status AggregationClient::OnReveal(ConstByteSpan data) {
  if (start_.mode != AggMode::kRobust || !RecordFor(data)) return Status::FailedPrecondition();
  // A repeated request (after a reconnect) is answered again; nothing new
  // can be asked once we are done.
  if (state_ != State::kAwaitReveal && state_ != State::kRevealing && state_ != State::kDone) {
    return Status::FailedPrecondition();
  }
  if (data.size() != RevealBytes(peer_count_)) return Status::InvalidArgument();
  for (uint32_t i = peer_count_; i < 4 * (data.size() - 4); ++i) {
    if (RevealOf(data, i) != RevealCode::kNothing) return Status::InvalidArgument();
  }
  // Check every entry before revealing any.
  for (uint32_t i = 0; i < peer_count_; ++i) {
    const RevealCode c = RevealOf(data, i);
    if (c == RevealCode::kNothing) continue;
    const AggregationPeer& p = memory_.peers[i];
    const bool known = c == RevealCode::kSelfSeed || c == RevealCode::kRoundSecret;
    if (!known || !p.in_mask_set || !p.message_received ||
        (p.revealed != RevealCode::kNothing && p.revealed != c)) {
      Refuse(Status::PermissionDenied());
      return Status::Ok();
    }
  }
  for (uint32_t i = 0; i < peer_count_; ++i) {
    AggregationPeer& p = memory_.peers[i];
    p.requested = RevealOf(data, i);
    if (p.requested != RevealCode::kNothing) p.revealed = p.requested;
  }
  state_ = State::kRevealing;
  cursor_ = 0;
  pending_ = false;
  return Status::Ok();
}

void AggregationClient::OnAbort(ConstByteSpan data) {
  if (!RecordFor(data) || !DecodeAggAbort(data).ok()) {
    ++stats_.records_refused;
    return;
  }
  if (state_ == State::kRefused && !refuse_sent_) return;  // our refusal still goes out
  Wipe();
  state_ = State::kAborted;
}

void AggregationClient::Refuse(Status why) {
  Wipe();
  refusal_ = why;
  refuse_sent_ = false;
  state_ = State::kRefused;
}

AggregationPeer* AggregationClient::FindPeer(uint32_t id) {
  const int32_t i = IndexOf(id);
  return i < 0 ? nullptr : &memory_.peers[static_cast<size_t>(i)];
}

int32_t AggregationClient::IndexOf(uint32_t id) const {
  size_t lo = 0;
  size_t hi = peer_count_;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (memory_.peers[mid].id < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < peer_count_ && memory_.peers[lo].id == id ? static_cast<int32_t>(lo) : -1;
}

bool AggregationClient::Peek(Outgoing* out) {
  if (!pending_) pending_ = BuildNext(&out_);
  if (pending_) *out = out_;
  return pending_;
}

bool AggregationClient::BuildNext(Outgoing* out) {
  *out = Outgoing{};
  switch (state_) {
    case State::kRefused: {
      if (refuse_sent_) return false;
      uint8_t rec[kAggAbortBytes];
      EncodeAggAbort(start_.aggregation, static_cast<uint8_t>(refusal_.code()), rec);
      CopyBytes(rec, kAggAbortBytes, buffer_);
      out->kind = kAggRefuse;
      out->bytes = ConstByteSpan(buffer_, kAggAbortBytes);
      return true;
    }
    case State::kSharing: {
      if (cursor_ < peer_count_) {
        const AggregationPeer& p = memory_.peers[cursor_];
        AggPeerMessage m;
        m.aggregation = start_.aggregation;
        m.round = start_.round;
        CopyBytes(keys_.public_key().data(), kAggPublicKeyBytes, m.public_key);
        m.has_shares = start_.mode == AggMode::kRobust;
        if (m.has_shares) {
          for (size_t w = 0; w < kShareWords; ++w) {
            m.self_seed[w] = memory_.shares[cursor_].y[w];
            m.round_secret[w] = memory_.shares[peer_count_ + cursor_].y[w];
          }
        }
        uint8_t bytes[kAggPeerMessageBytes];
        EncodeAggPeerMessage(m, bytes);
        CopyBytes(bytes, kAggPeerMessageBytes, buffer_);
        ZeroBytes(bytes, sizeof bytes);
        ZeroBytes(&m, sizeof m);
        out->to_peer = true;
        out->peer = p.id;
        out->bytes = ConstByteSpan(buffer_, kAggPeerMessageBytes);
        return true;
      }
      // Robust: fewer than t peers hold our shares, so the server could
      // not remove our masks if we dropped: leave instead.
      if (start_.mode == AggMode::kRobust ? shared_with_ < start_.threshold : shared_with_ < peer_count_) {
        Refuse(Status::Unavailable());
        return BuildNext(out);
      }
      AggKey k;
      k.aggregation = start_.aggregation;
      CopyBytes(keys_.public_key().data(), kAggPublicKeyBytes, k.public_key);
      k.shared_with = shared_with_;
      const Result<size_t> size = EncodeAggKey(k, peer_count_, ByteSpan(buffer_, sizeof buffer_));
      if (!size.ok()) return false;  // kMaxAggPeers keeps it within a record
      for (uint32_t i = 0; i < peer_count_; ++i) {
        if (memory_.peers[i].reached) SetAggKeyReached(ByteSpan(buffer_, *size), i);
      }
      out->kind = kAggKey;
      out->bytes = ConstByteSpan(buffer_, *size);
      return true;
    }
    case State::kMasking:
      if (!MaskIfReady()) return state_ == State::kRefused ? BuildNext(out) : false;
      return BuildNext(out);
    case State::kUploading: {
      const size_t left = start_.length - cursor_;
      const size_t n = left < kAggWordsPerRecord ? left : kAggWordsPerRecord;
      const Result<size_t> size =
          EncodeAggRun(start_.aggregation, static_cast<uint32_t>(cursor_),
                       Span<const uint32_t>(memory_.vector.data() + cursor_, n), ByteSpan(buffer_, sizeof buffer_));
      if (!size.ok()) return false;
      out->kind = kAggMasked;
      out->bytes = ConstByteSpan(buffer_, size.value());
      return true;
    }
    case State::kRevealing: {
      uint16_t count = 0;
      size_t at = kAggSharesHeaderBytes;
      size_t i = cursor_;
      for (; i < peer_count_ && count < kAggSharesPerRecord; ++i) {
        const AggregationPeer& p = memory_.peers[i];
        if (p.requested == RevealCode::kNothing) continue;
        RevealedShare s;
        s.peer = p.id;
        s.code = p.requested;
        const Share& from = p.requested == RevealCode::kSelfSeed ? p.self_seed_share : p.round_secret_share;
        for (size_t w = 0; w < kShareWords; ++w) s.y[w] = from.y[w];
        at += EncodeRevealedShare(s, buffer_ + at);
        ++count;
      }
      if (count == 0) {
        state_ = State::kDone;
        ++stats_.completed;
        return false;
      }
      EncodeAggSharesHeader(start_.aggregation, count, buffer_);
      reveal_end_ = i;
      out->kind = kAggShares;
      out->bytes = ConstByteSpan(buffer_, at);
      return true;
    }
    default:
      return false;
  }
}

void AggregationClient::Advance() {
  if (!pending_) return;
  pending_ = false;
  if (out_.to_peer) {
    stats_.bytes_to_peers += out_.bytes.size();
    ++stats_.peer_messages;
  } else {
    stats_.bytes_to_server += out_.bytes.size();
  }
  switch (state_) {
    case State::kRefused:
      refuse_sent_ = true;
      return;
    case State::kSharing:
      if (cursor_ < peer_count_) {
        memory_.peers[cursor_].reached = true;
        ++shared_with_;
        ++cursor_;
      } else {
        key_sent_ = true;
        state_ = State::kAwaitMaskSet;
      }
      return;
    case State::kUploading:
      cursor_ += out_.bytes.size() / 4 - 2;
      if (cursor_ >= start_.length) {
        if (start_.mode == AggMode::kRobust) {
          state_ = State::kAwaitReveal;
        } else {
          state_ = State::kDone;
          ++stats_.completed;
        }
      }
      return;
    case State::kRevealing:
      cursor_ = reveal_end_;
      return;
    default:
      return;
  }
}

void AggregationClient::SkipPeer() {
  if (!pending_ || state_ != State::kSharing || !out_.to_peer) return;
  pending_ = false;
  memory_.peers[cursor_].skipped = true;
  ++cursor_;
}

}  // namespace nodefl::secagg
