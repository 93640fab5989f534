// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/mcmc_role.h"

#include <mbedtls/sha256.h>

#include <cmath>

#include "nodefl/compare/session_result.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/core/sorted_search.h"
#include "nodefl/crypto/sha256.h"
#include "nodefl/lumos/kept_records.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::lumos {

LumosMcmcRole::LumosMcmcRole(uint32_t own_id, Span<McmcPeer> peers, Span<roles::KeyedPeer> neighbour_keys,
                             Span<roles::KeyedPeer> cache, Span<McmcContext> contexts,
                             const tls::TlsCredentials& credentials, crypto::RandomFunction random,
                             void* random_context)
    : own_id_(own_id),
      peers_(peers),
      contexts_(contexts),
      credentials_(credentials),
      random_(random),
      random_context_(random_context),
      keys_(credentials, random, random_context),
      neighbour_keys_(neighbour_keys),
      cache_(cache) {}

Status LumosMcmcRole::Init() {
  if (peers_.size() != neighbour_keys_.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id != neighbour_keys_[i].id) return Status::InvalidArgument();
  }
  for (const McmcContext& c : contexts_) {
    if (c.slots.size() == 0) return Status::InvalidArgument();
  }
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain() || random_ == nullptr) {
    return Status::FailedPrecondition();
  }
  return keys_.Bind(own_id_, neighbour_keys_, cache_);  // checks order, duplicates and the own id
}

void LumosMcmcRole::Bind(uint32_t greedy_workload) {
  greedy_workload_ = greedy_workload;
  for (McmcPeer& p : peers_) {
    p.took_iteration = 0;
    p.give = GiveState::kNone;
    p.taken_due = p.returned_due = 0;
  }
  bound_ = true;
}

uint32_t LumosMcmcRole::workload() const {
  uint32_t n = 0;
  for (const McmcPeer& p : peers_) n += p.keep ? 1u : 0u;
  return n;
}

uint32_t LumosMcmcRole::Uncovered() const {
  // Not kept here is fine only when the other end took the edge (kTaken)
  // or kept it from the start, which Alg. 1 decided by the comparison this
  // device cannot see any more; the move protocol is what could break it,
  // so only edges a move touched are checked here.
  uint32_t n = 0;
  for (const McmcPeer& p : peers_) {
    if (!p.keep && (p.give == GiveState::kGiveDue || p.give == GiveState::kGiven ||
                    p.give == GiveState::kReturnDue || p.give == GiveState::kReturnSent)) {
      ++n;
    }
  }
  return n;
}

McmcPeer* LumosMcmcRole::FindPeer(uint32_t id) {
  return FindSorted(peers_, id, [](const McmcPeer& p) { return p.id; });
}

// Both parties derive the OT tag from public facts of the session; the
// salt makes it unique to the job (as compare_role.cc does, with a label
// of this job kind so that the two jobs' tags never meet).
void LumosMcmcRole::DeriveTag(uint32_t session, uint32_t a, uint32_t b, ot::OtTag* tag) const {
  static constexpr uint8_t kLabel[] = {'n', 'o', 'd', 'e', 'f', 'l', ' ', 'l', 'u', 'm', 'o', 's', ' ', 'm', 'c', 'm', 'c'};
  uint8_t fields[20];
  StoreU64Le(job_id_, fields);
  StoreU32Le(session, fields + 8);
  StoreU32Le(a, fields + 12);
  StoreU32Le(b, fields + 16);
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  // A failure leaves a zero tag: the peers' OT keys then disagree and the
  // session aborts; nothing wrong is ever reported.
  if (crypto::sha256::Starts(&ctx) != 0 || crypto::sha256::Update(&ctx, kLabel, sizeof(kLabel)) != 0 ||
      crypto::sha256::Update(&ctx, params_.salt, compare::kCompareSaltBytes) != 0 ||
      crypto::sha256::Update(&ctx, fields, sizeof(fields)) != 0 || crypto::sha256::Finish(&ctx, tag->bytes) != 0) {
    *tag = ot::OtTag();
  }
  mbedtls_sha256_free(&ctx);
}

// ---- Job and rounds ---------------------------------------------------------------

void LumosMcmcRole::ResetJobState() {
  stats_ = Stats{};
  next_counter_ = 1;
  neighbour_keys_settled_ = 0;
  move_iteration_ = 0;
  reverting_ = false;
  before_move_ = workload();
  move_count_ = awaiting_ = leaves_due_ = 0;
  move_done_due_ = false;
  kept_cursor_ = 0;
  summary_sent_ = false;
  report_.Reset();
  for (Early& e : early_) e.used = false;
  for (McmcContext& c : contexts_) {
    if (c.busy && !c.early_result && !c.waiting_keys) c.session.Abort(Status::Cancelled());
    c.busy = c.waiting_keys = c.early_result = false;
  }
  for (McmcPeer& p : peers_) {
    p.took_iteration = 0;
    p.give = GiveState::kNone;
    p.taken_due = p.returned_due = 0;
  }
}

Status LumosMcmcRole::StartJob(const nodefl_wire_Envelope& message) {
  Result<McmcRoundParameters> params = DecodeMcmcParameters(protocol::BytesOf(message.body.job_start.parameters));
  if (!params.ok()) return params.status();
  if (message.round == 1) {
    if (params->phase != McmcPhase::kKeys) return Status::InvalidArgument();
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      report_.OnRepeatedRound(1);  // a reconnect or a replay: keep the key and counters
      return Status::Ok();
    }
    Result<compare::ComparisonPlan> plan = compare::PlanComparison(params->width, params->digit_bits);
    if (!plan.ok()) return plan.status();
    NODEFL_TRY(job_key_.Begin(message.job_id, ConstByteSpan(params->salt, compare::kCompareSaltBytes), random_,
                              random_context_));
    params_ = *params;
    plan_ = *plan;
    job_id_ = message.job_id;
    ResetJobState();
    // A device without a greedy orientation takes no part: it says so in
    // its round-1 report and asks for no keys.
    refused_ = !bound_;
    keys_.StartJob(job_key_.key(), false, [this](size_t) { return !refused_; });
    phase_ = Phase::kKeys;
    return Status::Ok();
  }
  if (message.job_id != job_id_ || phase_ == Phase::kIdle) return Status::FailedPrecondition();
  if (message.round == 2) {
    if (params->phase != McmcPhase::kIterate) return Status::InvalidArgument();
    if (phase_ == Phase::kKeys || phase_ == Phase::kKeysReported) phase_ = Phase::kIterate;
    return Status::Ok();
  }
  if (message.round == 3) {
    if (params->phase != McmcPhase::kReport) return Status::InvalidArgument();
    if (phase_ == Phase::kReporting || phase_ == Phase::kDone) {
      report_.OnRepeatedRound(3);
      return Status::Ok();
    }
    params_.upload_kept = params->upload_kept;
    // Sessions still running will not get their peers' messages any more.
    for (McmcContext& c : contexts_) {
      if (!c.busy || c.early_result) continue;
      if (c.waiting_keys) {
        Refuse(c, Status::Cancelled());
      } else if (c.session.state() == compare::ComparisonSession::State::kRunning) {
        c.session.Abort(Status::Cancelled());
      }
    }
    phase_ = Phase::kReporting;
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

void LumosMcmcRole::HandleCertificate(const nodefl_wire_PeerCertificate& certificate) {
  roles::KeyedPeer* peer = keys_.OnCertificate(certificate);
  if (peer == nullptr) return;
  if (keys_.IsNeighbour(peer->id)) ++neighbour_keys_settled_;
  const bool ready = peer->state == roles::PeerKeyState::kReady;
  for (McmcContext& c : contexts_) {
    if (!c.busy || !c.waiting_keys || c.peer != peer->id) continue;
    c.waiting_keys = false;
    if (peer->waiting > 0) --peer->waiting;
    if (ready) {
      RunSession(c);
    } else {
      Refuse(c, Status::Unauthenticated());
    }
  }
  // Messages that came before the keys.
  for (Early& e : early_) {
    if (!e.used || e.opened || e.src != peer->id) continue;
    e.used = false;
    if (ready) {
      OpenAndDispatch(*peer, ConstByteSpan(e.bytes, e.size));
    } else {
      ++stats_.rejected;
    }
  }
}

// ---- Comparisons ------------------------------------------------------------------

void LumosMcmcRole::Refuse(McmcContext& c, Status why) {
  c.early_result = true;
  c.refusal = why;
}

void LumosMcmcRole::StartSession(const McmcSessionStart& start) {
  McmcContext* free_context = nullptr;
  for (McmcContext& c : contexts_) {
    if (c.busy && c.id == start.start.session) return;  // a repeat: already running
    if (!c.busy && free_context == nullptr) free_context = &c;
  }
  if (free_context == nullptr) {
    // The server paces to max_sessions; its timeout settles this one.
    ++stats_.sessions_aborted;
    return;
  }
  McmcContext& c = *free_context;
  c.busy = true;
  c.waiting_keys = false;
  c.early_result = false;
  c.id = start.start.session;
  c.peer = start.start.peer;
  c.count = start.start.count;
  c.role = start.start.role;
  c.value = start.value;
  ++stats_.sessions_started;
  roles::KeyedPeer* peer = c.peer == own_id_ ? nullptr : keys_.FindOrAdd(c.peer);
  if (peer == nullptr) {
    Refuse(c, c.peer == own_id_ ? Status::InvalidArgument() : Status::ResourceExhausted());
    return;
  }
  keys_.Touch(peer);
  switch (peer->state) {
    case roles::PeerKeyState::kReady:
      RunSession(c);
      return;
    case roles::PeerKeyState::kFailed:
      Refuse(c, Status::Unauthenticated());
      return;
    case roles::PeerKeyState::kNone:
      keys_.Want(peer);
      ++stats_.key_requests;
      break;
    default:
      break;  // requested already
  }
  c.waiting_keys = true;
  ++peer->waiting;  // pinned in the cache until the session runs
}

void LumosMcmcRole::RunSession(McmcContext& c) {
  Status refusal = Status::Ok();
  if (c.count == 0 || c.count > c.slots.size() || c.count > compare::kMaxSessionResultComparisons ||
      c.count > sizeof(scratch_words_) / sizeof(scratch_words_[0]) ||
      (c.role == compare::Role::kA && c.tables.size() < size_t{c.count} * plan_.table_bytes())) {
    refusal = Status::ResourceExhausted();
  }
  const uint32_t value = c.value == McmcValue::kBeforeMove ? before_move_ : workload();
  if (refusal.ok() && value > plan_.MaxValue()) refusal = Status::OutOfRange();
  if (refusal.ok()) {
    compare::RunShape shape;
    shape.plan = plan_;
    shape.count = c.count;
    shape.mode = params_.mode;
    shape.reveal = true;
    shape.max_message_bytes = static_cast<uint32_t>(kMcmcCompareMessageBytes);
    ot::OtTag tag;
    const uint32_t a = c.role == compare::Role::kA ? own_id_ : c.peer;
    const uint32_t b = c.role == compare::Role::kA ? c.peer : own_id_;
    DeriveTag(c.id, a, b, &tag);
    uint32_t* values = scratch_words_;
    for (uint32_t i = 0; i < c.count; ++i) values[i] = value;
    refusal = c.session.SetStorage(compare::ComparisonStorage{c.slots, c.tables});
    if (refusal.ok()) {
      refusal = c.session.Start(c.role, shape, tag, Span<const uint32_t>(values, c.count), random_, random_context_);
    }
  }
  if (!refusal.ok()) {
    Refuse(c, refusal);
    return;
  }
  for (Early& e : early_) {
    if (e.used && e.opened && e.session == c.id && e.src == c.peer) {
      e.used = false;
      ++stats_.messages_received;
      (void)c.session.OnMessage(ConstByteSpan(e.bytes, e.size));  // errors end the session (reported)
    }
  }
}

void LumosMcmcRole::OnCompareMessage(uint32_t src, uint32_t session, ConstByteSpan payload) {
  for (McmcContext& c : contexts_) {
    if (c.busy && c.id == session && c.peer == src) {
      if (c.waiting_keys) break;  // cannot happen (we opened it with the keys), kept for clarity
      ++stats_.messages_received;
      if (!c.early_result) (void)c.session.OnMessage(payload);
      return;
    }
  }
  // The session has not started here yet: hold its first message.
  if (payload.size() <= kMcmcEarlyPayloadBytes) {
    for (Early& e : early_) {
      if (e.used) continue;
      e.used = true;
      e.opened = true;
      e.src = src;
      e.session = session;
      e.size = static_cast<uint16_t>(payload.size());
      for (size_t i = 0; i < payload.size(); ++i) e.bytes[i] = payload[i];
      return;
    }
  }
  ++stats_.rejected;
}

void LumosMcmcRole::HoldSealed(uint32_t src, ConstByteSpan sealed) {
  if (sealed.size() <= kMcmcEarlyBytes) {
    for (Early& e : early_) {
      if (e.used) continue;
      e.used = true;
      e.opened = false;
      e.src = src;
      e.size = static_cast<uint16_t>(sealed.size());
      for (size_t i = 0; i < sealed.size(); ++i) e.bytes[i] = sealed[i];
      return;
    }
  }
  ++stats_.rejected;
}

void LumosMcmcRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  if (message.job_id != job_id_ || phase_ == Phase::kIdle || phase_ == Phase::kDone) {
    ++stats_.rejected;
    return;
  }
  roles::KeyedPeer* peer = keys_.Find(d.src);
  if (peer != nullptr && peer->state == roles::PeerKeyState::kReady) {
    OpenAndDispatch(*peer, protocol::BytesOf(d.sealed));
    return;
  }
  // A candidate whose session started on its side first: its keys come
  // when our start record does. Held sealed until then.
  HoldSealed(d.src, protocol::BytesOf(d.sealed));
}

void LumosMcmcRole::OpenAndDispatch(roles::KeyedPeer& peer, ConstByteSpan sealed) {
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(peer.job_keys, peer.id, own_id_, job_id_, sealed,
                                     ByteSpan(scratch_, sizeof(scratch_words_)), &counter);
  if (!opened.ok() || *opened < 1) {
    ++stats_.rejected;
    return;
  }
  if (!peer.window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return;
  }
  keys_.Touch(&peer);
  const ConstByteSpan plaintext(scratch_, *opened);
  if (plaintext[0] == static_cast<uint8_t>(McmcPlaintextType::kCompareMessage) && plaintext.size() >= 5) {
    OnCompareMessage(peer.id, LoadU32Le(plaintext.data() + 1), plaintext.subspan(5));
    return;
  }
  Result<McmcLeafMessage> leaf = DecodeMcmcLeafMessage(plaintext);
  if (!leaf.ok()) {
    ++stats_.rejected;
    return;
  }
  ++stats_.messages_received;
  OnLeafMessage(peer.id, *leaf);
}

// ---- Moves (Alg. 2 lines 3-5, Eq. 17) and reverts ---------------------------------

uint32_t LumosMcmcRole::RandomBelow(uint32_t n) {
  // Rejection sampling over 32 random bits: uniform for any n.
  const uint32_t limit = UINT32_MAX - UINT32_MAX % n;
  for (;;) {
    uint8_t b[4] = {};
    if (random_(random_context_, b, sizeof(b)) != 0) return 0;  // the DRBG failed: the first choice
    const uint32_t r = LoadU32Le(b);
    if (r < limit) return r % n;
  }
}

void LumosMcmcRole::BeginMove(uint32_t iteration) {
  if (iteration == move_iteration_) {
    if (!reverting_ && awaiting_ == 0) move_done_due_ = true;  // asked again: answer again
    return;
  }
  // A new move: whatever the last one left is final now (Eq. 18 accepted it).
  for (McmcPeer& p : peers_) p.give = GiveState::kNone;
  move_iteration_ = iteration;
  reverting_ = false;
  awaiting_ = 0;
  before_move_ = workload();
  // Only leaves whose keys are ready can be given: the others stay kept.
  uint32_t n = 0;
  for (const McmcPeer& p : peers_) {
    const roles::KeyedPeer* k = keys_.Find(p.id);
    if (p.keep && k != nullptr && k->state == roles::PeerKeyState::kReady) ++n;
  }
  move_count_ = 0;
  if (n > 0) {
    // Alg. 2 line 3: k uniform in [1, ln n] (rounded, at least 1).
    const long hi = std::lround(std::log(static_cast<double>(n)));
    const uint32_t range = hi < 1 ? 1u : static_cast<uint32_t>(hi);
    uint32_t k = 1 + RandomBelow(range);
    if (k > n) k = n;
    move_count_ = k;
    // Line 4: k of the n leaves, uniformly (selection sampling: each
    // eligible leaf is taken with probability needed / remaining).
    uint32_t needed = k, remaining = n;
    for (McmcPeer& p : peers_) {
      const roles::KeyedPeer* key = keys_.Find(p.id);
      if (!p.keep || key == nullptr || key->state != roles::PeerKeyState::kReady) continue;
      if (RandomBelow(remaining) < needed) {
        p.give = GiveState::kGiveDue;
        ++leaves_due_;
        ++awaiting_;
        --needed;
      }
      --remaining;
    }
  }
  ++stats_.moves;
  if (awaiting_ == 0) move_done_due_ = true;
}

void LumosMcmcRole::BeginRevert(uint32_t iteration) {
  if (iteration != move_iteration_) return;  // not the move this device made
  if (reverting_) {
    if (awaiting_ == 0) move_done_due_ = true;  // asked again
    return;
  }
  reverting_ = true;
  move_done_due_ = false;
  awaiting_ = 0;
  move_count_ = 0;
  for (McmcPeer& p : peers_) {
    switch (p.give) {
      case GiveState::kGiveDue:  // never sent: nothing to undo
        p.give = GiveState::kNone;
        --leaves_due_;
        break;
      case GiveState::kGiven:  // the neighbour may take it yet: return it after
      case GiveState::kTaken:
        // Keep it again before telling the neighbour (coverage).
        p.keep = true;
        p.give = GiveState::kReturnDue;
        ++leaves_due_;
        ++awaiting_;
        ++move_count_;
        break;
      default:
        break;
    }
  }
  ++stats_.reverts;
  if (awaiting_ == 0) move_done_due_ = true;
}

void LumosMcmcRole::OnLeafMessage(uint32_t src, const McmcLeafMessage& m) {
  McmcPeer* p = FindPeer(src);
  if (p == nullptr) {
    ++stats_.rejected;  // leaves move along edges only
    return;
  }
  switch (m.kind) {
    case McmcLeafKind::kGive:
      if (p->took_iteration != m.iteration) {
        p->took_iteration = m.iteration;
        p->kept_before_take = p->keep;
        p->keep = true;  // before the answer says so
        ++stats_.taken;
      }
      if (p->taken_due == 0) ++leaves_due_;
      p->taken_due = m.iteration;
      return;
    case McmcLeafKind::kTaken:
      if (p->give == GiveState::kGiven && m.iteration == move_iteration_ && !reverting_) {
        p->keep = false;  // the neighbour keeps it now
        p->give = GiveState::kTaken;
        ++stats_.given;
        if (awaiting_ > 0 && --awaiting_ == 0) move_done_due_ = true;
      }
      return;
    case McmcLeafKind::kReturn:
      if (p->took_iteration == m.iteration) {
        p->keep = p->kept_before_take;  // the mover keeps it again already
        p->took_iteration = 0;
      }
      if (p->returned_due == 0) ++leaves_due_;
      p->returned_due = m.iteration;
      return;
    case McmcLeafKind::kReturned:
      if (p->give == GiveState::kReturnSent && m.iteration == move_iteration_ && reverting_) {
        p->give = GiveState::kReturned;
        if (awaiting_ > 0 && --awaiting_ == 0) move_done_due_ = true;
      }
      return;
  }
}

// ---- Server records ---------------------------------------------------------------

void LumosMcmcRole::HandleData(const nodefl_wire_JobData& data) {
  const ConstByteSpan bytes = protocol::BytesOf(data.data);
  if (phase_ != Phase::kIterate) return;  // records of round 2 only
  switch (data.kind) {
    case kMcmcSessionStart:
      if (bytes.size() % kMcmcSessionStartBytes != 0) return;
      for (size_t at = 0; at < bytes.size(); at += kMcmcSessionStartBytes) {
        Result<McmcSessionStart> start = DecodeMcmcSessionStart(bytes.subspan(at, kMcmcSessionStartBytes));
        if (start.ok()) StartSession(*start);
      }
      return;
    case kMcmcSessionCancel:
      if (bytes.size() % 4 != 0) return;
      for (size_t at = 0; at < bytes.size(); at += 4) {
        const uint32_t id = LoadU32Le(bytes.data() + at);
        for (McmcContext& c : contexts_) {
          if (!c.busy || c.id != id || c.early_result) continue;
          if (c.waiting_keys) {
            c.waiting_keys = false;
            if (roles::KeyedPeer* k = keys_.Find(c.peer)) {
              if (k->waiting > 0) --k->waiting;
            }
            Refuse(c, Status::Cancelled());
          } else {
            c.session.Abort(Status::Cancelled());
          }
        }
      }
      return;
    case kMcmcMove:
    case kMcmcRevert: {
      if (bytes.size() != 4) return;
      const uint32_t iteration = LoadU32Le(bytes.data());
      if (iteration == 0) return;
      if (data.kind == kMcmcMove) {
        BeginMove(iteration);
      } else {
        BeginRevert(iteration);
      }
      return;
    }
    default:
      return;
  }
}

Status LumosMcmcRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return StartJob(message);
    case nodefl_wire_Envelope_peer_certificate_tag:
      if (message.job_id == job_id_ && phase_ != Phase::kIdle && phase_ != Phase::kDone) {
        HandleCertificate(message.body.peer_certificate);
      }
      return Status::Ok();
    case nodefl_wire_Envelope_relay_deliver_tag:
      HandleDelivery(message);
      return Status::Ok();
    case nodefl_wire_Envelope_job_data_tag:
      if (message.job_id == job_id_) HandleData(message.body.job_data);
      return Status::Ok();
    default:
      return Status::Unimplemented();
  }
}

// ---- Sending ----------------------------------------------------------------------

Status LumosMcmcRole::SendSealed(uint32_t dst, ConstByteSpan plaintext, device::DeviceSession& session) {
  roles::KeyedPeer* peer = keys_.Find(dst);
  if (peer == nullptr || peer->state != roles::PeerKeyState::kReady) return Status::FailedPrecondition();
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, 2);
  m.body.relay_send.dst = dst;
  const seal::SealHeader header{own_id_, dst, job_id_, next_counter_};
  Result<size_t> sealed = seal::Seal(peer->job_keys, header, plaintext, ByteSpan(m.body.relay_send.sealed.bytes));
  if (!sealed.ok()) return sealed.status();
  m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
  NODEFL_TRY(session.Send(m));
  ++next_counter_;
  ++stats_.messages_sent;
  keys_.Touch(peer);
  return Status::Ok();
}

Status LumosMcmcRole::SendLeaf(McmcPeer& p, McmcLeafKind kind, uint32_t iteration, device::DeviceSession& session) {
  uint8_t plaintext[kMcmcLeafMessageBytes];
  Result<size_t> n = EncodeMcmcLeafMessage(McmcLeafMessage{kind, iteration}, ByteSpan(plaintext));
  if (!n.ok()) return n.status();
  return SendSealed(p.id, ConstByteSpan(plaintext, *n), session);
}

Status LumosMcmcRole::FlushLeaves(device::DeviceSession& session) {
  for (McmcPeer& p : peers_) {
    if (leaves_due_ == 0) break;
    if (!session.CanSend()) return Status::Ok();
    if (p.taken_due != 0) {
      const uint32_t it = p.taken_due;
      p.taken_due = 0;
      --leaves_due_;
      NODEFL_TRY(SendLeaf(p, McmcLeafKind::kTaken, it, session));
      if (!session.CanSend()) return Status::Ok();
    }
    if (p.returned_due != 0) {
      const uint32_t it = p.returned_due;
      p.returned_due = 0;
      --leaves_due_;
      NODEFL_TRY(SendLeaf(p, McmcLeafKind::kReturned, it, session));
      if (!session.CanSend()) return Status::Ok();
    }
    if (p.give == GiveState::kGiveDue) {
      p.give = GiveState::kGiven;
      --leaves_due_;
      NODEFL_TRY(SendLeaf(p, McmcLeafKind::kGive, move_iteration_, session));
    } else if (p.give == GiveState::kReturnDue) {
      p.give = GiveState::kReturnSent;
      --leaves_due_;
      NODEFL_TRY(SendLeaf(p, McmcLeafKind::kReturn, move_iteration_, session));
    }
  }
  return Status::Ok();
}

Status LumosMcmcRole::Pump(McmcContext& c, device::DeviceSession& session) {
  while (session.CanSend()) {
    Result<size_t> n = c.session.NextMessage(ByteSpan(scratch_ + 5, kMcmcCompareMessageBytes));
    if (!n.ok() || *n == 0) break;
    scratch_[0] = static_cast<uint8_t>(McmcPlaintextType::kCompareMessage);
    StoreU32Le(c.id, scratch_ + 1);
    const Status sent = SendSealed(c.peer, ConstByteSpan(scratch_, 5 + *n), session);
    if (!sent.ok()) {
      c.session.Abort(sent);
      break;
    }
  }
  return Status::Ok();
}

Status LumosMcmcRole::SendResult(McmcContext& c, device::DeviceSession& session) {
  // Paper mode: the results are public (Alg. 3's server learns them).
  const compare::SessionResult r = compare::MakeSessionResult(c.id, c.count, c.early_result ? nullptr : &c.session,
                                                              c.refusal, /*results_public=*/true);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 2);
  m.body.job_data.kind = kMcmcSessionResult;
  Result<size_t> n = compare::EncodeSessionResult(r, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  NODEFL_TRY(session.Send(m));
  if (r.done) {
    ++stats_.sessions_done;
  } else {
    ++stats_.sessions_aborted;
  }
  c.busy = false;
  return Status::Ok();
}

Status LumosMcmcRole::SendKeyRequests(device::DeviceSession& session) {
  // The server holds our job key before anyone asks it for it.
  NODEFL_TRY(job_key_.SendIfDue(session, phase_ == Phase::kIterate ? 2 : 1));
  if (job_key_.due()) return Status::Ok();
  return roles::SendWantedKeyRequests(keys_, session, job_id_, phase_ == Phase::kIterate ? 2 : 1,
                                     kMcmcMaxOutstandingKeyRequests);
}

Status LumosMcmcRole::SendMoveDone(device::DeviceSession& session) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 2);
  m.body.job_data.kind = kMcmcMoveDone;
  McmcMoveDone d;
  d.iteration = move_iteration_;
  d.reverted = reverting_;
  d.moved = move_count_;
  if (!reverting_) {
    // Edges actually given (a leaf whose kTaken never came stays kept).
    d.moved = 0;
    for (const McmcPeer& p : peers_) d.moved += p.give == GiveState::kTaken ? 1u : 0u;
  }
  Result<size_t> n = EncodeMcmcMoveDone(d, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  NODEFL_TRY(session.Send(m));
  move_done_due_ = false;
  return Status::Ok();
}

Status LumosMcmcRole::SendKept(device::DeviceSession& session) {
  return SendKeptRecords(session, job_id_, 3, kMcmcKept, Span<const McmcPeer>(peers_.data(), peers_.size()),
                         &kept_cursor_);
}

Status LumosMcmcRole::SendSummary(device::DeviceSession& session) {
  McmcSummary s;
  s.workload = workload();
  s.greedy_workload = greedy_workload_;
  s.uncovered = Uncovered();
  s.moves = stats_.moves;
  s.reverts = stats_.reverts;
  s.taken = stats_.taken;
  s.sessions_done = stats_.sessions_done;
  s.sessions_aborted = stats_.sessions_aborted;
  s.messages_sent = stats_.messages_sent;
  s.messages_received = stats_.messages_received;
  s.rejected = stats_.rejected;
  s.key_failures = keys_.key_failures();
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 3);
  m.body.job_data.kind = kMcmcSummary;
  Result<size_t> n = EncodeMcmcSummary(s, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  return session.Send(m);
}

Status LumosMcmcRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_MCMC;
  r.code = static_cast<uint32_t>(outcome.code());
  r.expected = stats_.sessions_started;
  r.sent = stats_.sessions_done;
  r.received = stats_.messages_received;
  r.duplicates = stats_.duplicates;
  r.rejected = stats_.sessions_aborted + stats_.rejected;
  return session.Send(m);
}

void LumosMcmcRole::OnSessionRestart(bool) {
  // Certificate requests in flight died with the old connection.
  keys_.OnRestart();
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

Status LumosMcmcRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  NODEFL_TRY(SendKeyRequests(session));
  if (phase_ == Phase::kKeys) {
    const bool settled = refused_ || neighbour_keys_settled_ >= peers_.size();
    if (settled && !job_key_.due() && session.CanSend()) {
      // Key failures are counted in the summary; their edges' comparisons
      // abort and their leaves are never given, which Alg. 3 and the
      // coverage tolerate. Only a device without a greedy result refuses.
      NODEFL_TRY(Report(session, 1, refused_ ? Status::FailedPrecondition() : Status::Ok()));
      phase_ = refused_ ? Phase::kDone : Phase::kKeysReported;
      if (refused_) job_key_.End();
    }
    return Status::Ok();
  }
  NODEFL_TRY(FlushLeaves(session));
  if (move_done_due_ && session.CanSend()) NODEFL_TRY(SendMoveDone(session));
  for (McmcContext& c : contexts_) {
    if (!c.busy || c.waiting_keys) continue;
    if (!c.early_result) NODEFL_TRY(Pump(c, session));
    const bool over = c.early_result || c.session.state() == compare::ComparisonSession::State::kDone ||
                      c.session.state() == compare::ComparisonSession::State::kAborted;
    // An abort notice for the peer goes out (Pump) before the result.
    if (over && session.CanSend()) NODEFL_TRY(SendResult(c, session));
  }
  if (phase_ != Phase::kReporting) return Status::Ok();
  for (const McmcContext& c : contexts_) {
    if (c.busy) return Status::Ok();
  }
  if (leaves_due_ != 0) return Status::Ok();  // answers owed to neighbours go first
  if (params_.upload_kept) NODEFL_TRY(SendKept(session));
  if (params_.upload_kept && kept_cursor_ < peers_.size()) return Status::Ok();
  if (!summary_sent_ && session.CanSend()) {
    NODEFL_TRY(SendSummary(session));
    summary_sent_ = true;
  }
  if (summary_sent_ && session.CanSend()) {
    NODEFL_TRY(Report(session, 3, Status::Ok()));
    phase_ = Phase::kDone;
    // Nothing more is sealed or opened in this job.
    keys_.EndJob();
    job_key_.End();
  }
  return Status::Ok();
}

}  // namespace nodefl::lumos
