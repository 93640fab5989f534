// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/session_result.h"

#include <mbedtls/sha256.h>

#include <cmath>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/sorted_search.h"
#include "nodefl/crypto/sha256.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/roles/peer_key_requests.h"

namespace nodefl::compare {

SecureCompareRole::SecureCompareRole(uint32_t own_id, Span<ComparePeer> peers, Span<CompareContext> contexts,
                                     const tls::TlsCredentials& credentials, crypto::RandomFunction random,
                                     void* random_context)
    : own_id_(own_id),
      peers_(peers),
      contexts_(contexts),
      credentials_(credentials),
      random_(random),
      random_context_(random_context) {}

Status SecureCompareRole::Init() {
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id == own_id_) return Status::InvalidArgument();
    if (i > 0 && peers_[i - 1].id >= peers_[i].id) return Status::InvalidArgument();
  }
  for (const CompareContext& c : contexts_) {
    if (c.slots.size() == 0) return Status::InvalidArgument();
  }
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain() || random_ == nullptr) {
    return Status::FailedPrecondition();
  }
  return Status::Ok();
}

uint32_t SecureCompareRole::LogDegree(uint32_t degree) {
  if (degree <= 1) return 0;
  return static_cast<uint32_t>(std::lround(std::log(static_cast<double>(degree))));
}

uint32_t SecureCompareRole::round() const {
  switch (phase_) {
    case Phase::kIdle: return 0;
    case Phase::kKeys:
    case Phase::kKeysReported: return 1;
    case Phase::kSessions: return 2;
    case Phase::kDone: return 3;
  }
  return 0;
}

ComparePeer* SecureCompareRole::FindPeer(uint32_t id) {
  return FindSorted(peers_, id, [](const ComparePeer& p) { return p.id; });
}

// Both parties derive the OT tag from public facts of the session; the
// salt makes it unique to the job.
void SecureCompareRole::DeriveTag(uint32_t session, uint32_t a, uint32_t b, ot::OtTag* tag) const {
  static constexpr uint8_t kLabel[] = {'n', 'o', 'd', 'e', 'f', 'l', ' ', 'c', 'o', 'm', 'p', 'a', 'r', 'e'};
  uint8_t fields[20];
  StoreU64Le(job_id_, fields);
  StoreU32Le(session, fields + 8);
  StoreU32Le(a, fields + 12);
  StoreU32Le(b, fields + 16);
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  // SHA-256 over in-memory data cannot fail in MbedTLS's software
  // implementation; a failure would leave a zero tag, which only makes the
  // OT keys of this session disagree with the peer's (the run aborts).
  if (crypto::sha256::Starts(&ctx) != 0 || crypto::sha256::Update(&ctx, kLabel, sizeof(kLabel)) != 0 ||
      crypto::sha256::Update(&ctx, params_.salt, kCompareSaltBytes) != 0 ||
      crypto::sha256::Update(&ctx, fields, sizeof(fields)) != 0 || crypto::sha256::Finish(&ctx, tag->bytes) != 0) {
    *tag = ot::OtTag();
  }
  mbedtls_sha256_free(&ctx);
}

Status SecureCompareRole::StartJob(const nodefl_wire_Envelope& message) {
  const nodefl_wire_JobStart& start = message.body.job_start;
  if (message.round == 1) {
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      // The job this role runs, again (a reconnect, or a replay): keep the
      // ephemeral key and the counters under it; only repeat the report.
      report_.OnRepeatedRound(1);
      return Status::Ok();
    }
    Result<CompareJobParameters> params = DecodeCompareParameters(protocol::BytesOf(start.parameters));
    if (!params.ok()) return params.status();
    Result<ComparisonPlan> plan = PlanComparison(params->width, params->digit_bits);
    if (!plan.ok()) return plan.status();
    // A fresh ephemeral key, and with it fresh counters and windows below.
    const Status keyed =
        job_key_.Begin(message.job_id, ConstByteSpan(params->salt, kCompareSaltBytes), random_, random_context_);
    if (!keyed.ok()) {
      phase_ = Phase::kIdle;
      return keyed;
    }
    params_ = *params;
    plan_ = *plan;
    job_id_ = message.job_id;
    directory_ = start.peer_directory;
    directory_rx_.Reset();
    const uint32_t degree = static_cast<uint32_t>(peers_.size());
    value_ = params_.value == CompareValue::kLogDegree ? LogDegree(degree) : degree;
    phase_ = Phase::kKeys;
    stats_ = Stats{};
    request_cursor_ = session_request_cursor_ = 0;
    outstanding_requests_ = keys_settled_ = 0;
    session_requests_sent_ = false;
    report_.Reset();
    report_due_ = false;
    for (Early& e : early_) e.used = false;
    for (CompareContext& c : contexts_) {
      if (c.busy) c.session.Abort(Status::Cancelled());
      c.busy = false;
    }
    for (ComparePeer& p : peers_) {
      p.job_keys.Wipe();
      p.window = seal::ReplayWindow();
      p.next_counter = 1;
      p.key_ready = false;
      // Every job needs each neighbour's job key; pair keys are kept, so a
      // known neighbour's certificate is not checked again. With a
      // directory nothing is requested: every neighbour awaits its entry.
      p.key_requested = directory_;
      p.key_answered = false;
      p.outcome = PeerOutcome::kNone;
    }
    return Status::Ok();
  }
  if (message.job_id != job_id_) return Status::FailedPrecondition();
  if (message.round == 2) {
    if (phase_ == Phase::kSessions || phase_ == Phase::kDone) return Status::Ok();  // again: go on
    if (phase_ != Phase::kKeys && phase_ != Phase::kKeysReported) return Status::FailedPrecondition();
    phase_ = Phase::kSessions;
    return Status::Ok();
  }
  if (message.round == 3) {
    // Anything still running will not get its peer's messages any more.
    for (CompareContext& c : contexts_) {
      if (c.busy && c.session.state() == ComparisonSession::State::kRunning) c.session.Abort(Status::Cancelled());
    }
    report_due_ = true;
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

void SecureCompareRole::HandleCertificate(const nodefl_wire_PeerCertificate& cert) {
  ComparePeer* peer = FindPeer(cert.device_id);
  if (peer == nullptr || !peer->key_requested || peer->key_answered) return;  // not asked for: ignored
  peer->key_answered = true;
  if (outstanding_requests_ > 0) --outstanding_requests_;
  ++keys_settled_;
  Status s = Status::NotFound();
  if (cert.found) {
    s = peer->pair_keys.valid ? Status::Ok()
                              : key_source_.Derive(credentials_, protocol::BytesOf(cert.certificate_der), own_id_,
                                                   peer->id, random_, random_context_, &peer->pair_keys);
  }
  if (s.ok()) {
    s = key_source_.DeriveJob(peer->pair_keys, job_key_.key(), own_id_, protocol::BytesOf(cert.job_key), random_,
                              random_context_, &peer->job_keys);
  }
  if (s.ok()) {
    peer->key_ready = true;
  } else {
    peer->pair_keys.Wipe();
    ++stats_.key_failures;
  }
}

void SecureCompareRole::OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry) {
  static_cast<SecureCompareRole*>(context)->HandleCertificate(entry);  // only neighbours' entries are taken
}

Status SecureCompareRole::HandleDirectoryChunk(const nodefl_wire_Envelope& message) {
  // The transfer may go on after the neighbours' entries came (and the
  // round was reported): it is still received whole.
  if (!directory_ || message.job_id != job_id_ || phase_ == Phase::kIdle) return Status::FailedPrecondition();
  NODEFL_TRY(message.which_body == nodefl_wire_Envelope_chunk_header_tag
                 ? directory_rx_.OnHeader(message.body.chunk_header)
                 : directory_rx_.OnChunk(message.body.chunk));
  if (directory_rx_.complete()) {
    const uint32_t missing = roles::SettlePeersMissingFromDirectory(peers_);
    keys_settled_ += missing;
    stats_.key_failures += missing;
  }
  return Status::Ok();
}

void SecureCompareRole::StartSession(const SessionStart& start) {
  CompareContext* free_context = nullptr;
  for (CompareContext& c : contexts_) {
    if (c.busy && c.id == start.session) return;  // a repeat: already running
    if (!c.busy && free_context == nullptr) free_context = &c;
  }
  if (free_context == nullptr) {
    // No room (the server paces to the job's max_sessions): cannot even
    // report through a context; count it. The server's timeout settles it.
    ++stats_.refused;
    return;
  }
  CompareContext& c = *free_context;
  c.busy = true;
  c.reported = false;
  c.early_result = false;
  c.id = start.session;
  c.peer = start.peer;
  c.count = start.count;
  c.role = start.role;
  ++stats_.started;
  const ComparePeer* peer = FindPeer(start.peer);
  Status refusal = Status::Ok();
  if (peer == nullptr || !peer->key_ready) {
    refusal = Status::FailedPrecondition();  // only neighbours with keys
  } else if (start.count > c.slots.size() || start.count > kMaxSessionResultComparisons ||
             start.count > sizeof(scratch_words_) / sizeof(scratch_words_[0]) ||
             (start.role == compare::Role::kA && c.tables.size() < size_t{start.count} * plan_.table_bytes())) {
    refusal = Status::ResourceExhausted();
  } else if (value_ > plan_.MaxValue()) {
    refusal = Status::OutOfRange();
  }
  if (refusal.ok()) {
    RunShape shape;
    shape.plan = plan_;
    shape.count = start.count;
    shape.mode = params_.mode;
    shape.reveal = true;
    shape.max_message_bytes = static_cast<uint32_t>(kCompareMessageBytes);
    ot::OtTag tag;
    const uint32_t a = start.role == compare::Role::kA ? own_id_ : start.peer;
    const uint32_t b = start.role == compare::Role::kA ? start.peer : own_id_;
    DeriveTag(start.session, a, b, &tag);
    // Every comparison of the session compares this device's value.
    uint32_t* values = scratch_words_;
    for (uint32_t i = 0; i < start.count; ++i) values[i] = value_;
    refusal = c.session.SetStorage(ComparisonStorage{c.slots, c.tables});
    if (refusal.ok()) {
      refusal = c.session.Start(start.role, shape, tag, Span<const uint32_t>(values, start.count), random_,
                                random_context_);
    }
  }
  if (!refusal.ok()) {
    c.early_result = true;
    c.refusal = refusal;
    ++stats_.refused;
    return;
  }
  // A message of this session that arrived first.
  for (Early& e : early_) {
    if (e.used && e.session == start.session && e.src == start.peer) {
      e.used = false;
      (void)c.session.OnMessage(ConstByteSpan(e.bytes, e.size));
      ++stats_.messages_received;
    }
  }
}

void SecureCompareRole::HandleData(const nodefl_wire_JobData& data) {
  const ConstByteSpan bytes = protocol::BytesOf(data.data);
  if (data.kind == kSessionStart) {
    if (phase_ != Phase::kSessions || bytes.size() % kSessionStartBytes != 0) return;
    for (size_t at = 0; at < bytes.size(); at += kSessionStartBytes) {
      Result<SessionStart> start = DecodeSessionStart(bytes.subspan(at, kSessionStartBytes));
      if (start.ok()) StartSession(*start);
    }
    return;
  }
  if (data.kind == kSessionCancel) {
    if (bytes.size() % 4 != 0) return;
    for (size_t at = 0; at < bytes.size(); at += 4) {
      const uint32_t id = LoadU32Le(bytes.data() + at);
      for (CompareContext& c : contexts_) {
        if (c.busy && c.id == id && !c.early_result) c.session.Abort(Status::Cancelled());
      }
    }
  }
}

void SecureCompareRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  ComparePeer* peer = FindPeer(d.src);
  if (peer == nullptr || !peer->key_ready || message.job_id != job_id_) {
    ++stats_.rejected;
    return;
  }
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(peer->job_keys, d.src, own_id_, job_id_, protocol::BytesOf(d.sealed),
                                     ByteSpan(scratch_, sizeof(scratch_words_)), &counter);
  if (!opened.ok() || *opened < 4) {
    ++stats_.rejected;
    return;
  }
  if (!peer->window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return;
  }
  const uint32_t session = LoadU32Le(scratch_);
  const ConstByteSpan payload(scratch_ + 4, *opened - 4);
  for (CompareContext& c : contexts_) {
    if (c.busy && c.id == session && c.peer == d.src) {
      ++stats_.messages_received;
      if (!c.early_result) (void)c.session.OnMessage(payload);  // errors end the session (reported)
      return;
    }
  }
  // Not started here yet: keep it (only a session's first message can
  // overtake the server's start record, and first messages are small).
  if (payload.size() <= kEarlyMessageBytes) {
    for (Early& e : early_) {
      if (!e.used) {
        e.used = true;
        e.session = session;
        e.src = d.src;
        e.size = static_cast<uint16_t>(payload.size());
        for (size_t i = 0; i < payload.size(); ++i) e.bytes[i] = payload[i];
        return;
      }
    }
  }
  ++stats_.rejected;
}

Status SecureCompareRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return StartJob(message);
    case nodefl_wire_Envelope_peer_certificate_tag:
      if (message.job_id == job_id_ && phase_ == Phase::kKeys) HandleCertificate(message.body.peer_certificate);
      return Status::Ok();
    case nodefl_wire_Envelope_relay_deliver_tag:
      HandleDelivery(message);
      return Status::Ok();
    case nodefl_wire_Envelope_job_data_tag:
      if (message.job_id == job_id_) HandleData(message.body.job_data);
      return Status::Ok();
    case nodefl_wire_Envelope_chunk_header_tag:
    case nodefl_wire_Envelope_chunk_tag:
      return HandleDirectoryChunk(message);
    default:
      return Status::Unimplemented();
  }
}

Status SecureCompareRole::SendKeyRequests(device::DeviceSession& session) {
  // The server holds our job key before anyone asks it for it.
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (job_key_.due() || directory_) return Status::Ok();
  return roles::SendPeerKeyRequests(session, job_id_, 1, peers_, &request_cursor_, &outstanding_requests_,
                                    kCompareMaxOutstandingKeyRequests);
}

Status SecureCompareRole::SendSessionRequests(device::DeviceSession& session) {
  // Neighbours of higher id with keys, as many per record as fit.
  while (session_request_cursor_ < peers_.size() && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 1);
    m.body.job_data.kind = kSessionRequests;
    const size_t capacity = sizeof(m.body.job_data.data.bytes) / 4;
    size_t n = 0;
    while (session_request_cursor_ < peers_.size() && n < capacity) {
      const ComparePeer& p = peers_[session_request_cursor_++];
      if (p.id <= own_id_ || !p.key_ready) continue;
      StoreU32Le(p.id, m.body.job_data.data.bytes + 4 * n);
      ++n;
    }
    if (n == 0) break;
    m.body.job_data.data.size = static_cast<pb_size_t>(4 * n);
    stats_.requested += static_cast<uint32_t>(n);
    NODEFL_TRY(session.Send(m));
  }
  if (session_request_cursor_ >= peers_.size()) session_requests_sent_ = true;
  return Status::Ok();
}

Status SecureCompareRole::Pump(CompareContext& c, device::DeviceSession& session) {
  ComparePeer* peer = FindPeer(c.peer);
  while (peer != nullptr && session.CanSend()) {
    Result<size_t> n = c.session.NextMessage(ByteSpan(scratch_ + 4, kCompareMessageBytes));
    if (!n.ok() || *n == 0) break;
    StoreU32Le(c.id, scratch_);
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, 2);
    m.body.relay_send.dst = c.peer;
    const seal::SealHeader header{own_id_, c.peer, job_id_, peer->next_counter};
    Result<size_t> sealed = seal::Seal(peer->job_keys, header, ConstByteSpan(scratch_, 4 + *n),
                                       ByteSpan(m.body.relay_send.sealed.bytes));
    if (!sealed.ok()) {
      c.session.Abort(sealed.status());
      break;
    }
    m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
    NODEFL_TRY(session.Send(m));
    ++peer->next_counter;
    ++stats_.messages_sent;
    stats_.bytes_sent += *n;
  }
  return Status::Ok();
}

Status SecureCompareRole::SendResult(CompareContext& c, device::DeviceSession& session) {
  const SessionResult r =
      MakeSessionResult(c.id, c.count, c.early_result ? nullptr : &c.session, c.refusal, params_.results_public);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 2);
  m.body.job_data.kind = kSessionResult;
  Result<size_t> n = EncodeSessionResult(r, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  NODEFL_TRY(session.Send(m));
  if (r.done) {
    ++stats_.done;
  } else {
    ++stats_.aborted;
  }
  if (c.count == 1) {
    if (ComparePeer* peer = FindPeer(c.peer)) {
      // x belongs to party A, and the results say [x > y], [x = y].
      const bool own_is_x = c.role == compare::Role::kA;
      if (!r.done || c.early_result) {
        peer->outcome = PeerOutcome::kAborted;
      } else if (c.session.equal(0)) {
        peer->outcome = PeerOutcome::kEqual;
      } else {
        const bool x_greater = c.session.greater(0);
        peer->outcome = x_greater == own_is_x ? PeerOutcome::kGreater : PeerOutcome::kLess;
      }
    }
  }
  c.reported = true;
  c.busy = false;
  return Status::Ok();
}

void SecureCompareRole::ForgetJobKeys() {
  for (ComparePeer& p : peers_) {
    p.job_keys.Wipe();
    p.key_ready = false;
  }
}

void SecureCompareRole::OnSessionRestart(bool) {
  // Certificate requests in flight died with the old connection.
  if (phase_ == Phase::kKeys && !directory_) {
    roles::ForgetUnansweredPeerKeyRequests(peers_, &request_cursor_, &outstanding_requests_);
  }
  // The server keeps our job key; announcing it again covers one that lost it.
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

Status SecureCompareRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE;
  r.code = static_cast<uint32_t>(outcome.code());
  r.expected = stats_.requested;
  r.sent = stats_.done;
  r.received = stats_.messages_received;
  r.duplicates = stats_.duplicates;
  r.rejected = stats_.aborted + stats_.rejected;
  return session.Send(m);
}

Status SecureCompareRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  if (phase_ == Phase::kKeys) {
    NODEFL_TRY(SendKeyRequests(session));
    if (AllKeysSettled() && !session_requests_sent_) NODEFL_TRY(SendSessionRequests(session));
    if (AllKeysSettled() && session_requests_sent_ && session.CanSend()) {
      NODEFL_TRY(Report(session, 1, stats_.key_failures == 0 ? Status::Ok() : Status::Unauthenticated()));
      phase_ = Phase::kKeysReported;
    }
    return Status::Ok();
  }
  for (CompareContext& c : contexts_) {
    if (!c.busy) continue;
    if (!c.early_result) NODEFL_TRY(Pump(c, session));
    const bool over = c.early_result || c.session.state() == ComparisonSession::State::kDone ||
                      c.session.state() == ComparisonSession::State::kAborted;
    // An abort notice for the peer goes out (Pump) before the report.
    if (over && session.CanSend()) NODEFL_TRY(SendResult(c, session));
  }
  if (report_due_ && session.CanSend()) {
    bool idle = true;
    for (const CompareContext& c : contexts_) idle = idle && !c.busy;
    if (idle) {
      NODEFL_TRY(Report(session, 3, Status::Ok()));
      phase_ = Phase::kDone;
      // Nothing more is sealed or opened in this job: forget its keys,
      // unless a follow-on job takes them over (it wipes them then).
      job_key_.End();
      if (!hand_over_keys_) ForgetJobKeys();
    }
  }
  return Status::Ok();
}

}  // namespace nodefl::compare
