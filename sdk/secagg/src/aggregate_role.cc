// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/aggregate_role.h"

#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::secagg {
namespace {

Status FillSynthetic(void* context, const AggStart& start, Span<uint32_t> out) {
  const auto* role_input = static_cast<const std::pair<uint64_t, uint32_t>*>(context);
  for (uint32_t i = 0; i < start.length; ++i) {
    out[i] = SyntheticInput(role_input->first, start.aggregation, role_input->second, i);
  }
  return Status::Ok();
}

}  // namespace

SecureAggregateRole::SecureAggregateRole(uint32_t own_id, const SecureAggregateMemory& memory,
                                         const tls::TlsCredentials& credentials, Drbg& random)
    : own_id_(own_id),
      memory_(memory),
      random_(random),
      keys_(credentials, &crypto::DrbgRandom, &random),
      client_(own_id, memory.aggregation, random) {
  (void)keys_.Bind(own_id_, Span<roles::KeyedPeer>(), memory_.keys);
}

Status SecureAggregateRole::StartJob(const nodefl_wire_Envelope& message) {
  if (message.round == 1) {
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      report_.OnRepeatedRound(1);
      return Status::Ok();  // the job we run, again: keep keys and counters
    }
    NODEFL_TRY_ASSIGN(SecureAggregateParameters params,
                      DecodeSecureAggregateParameters(protocol::BytesOf(message.body.job_start.parameters)));
    NODEFL_TRY(job_key_.Begin(message.job_id, ConstByteSpan(params.salt, kAggregateSaltBytes), &crypto::DrbgRandom,
                              &random_));
    params_ = params;
    job_id_ = message.job_id;
    next_counter_ = 1;
    keyed_aggregation_ = input_aggregation_ = 0;
    stats_ = Stats{};
    report_.Reset();
    client_.Reset();
    keys_.StartJob(job_key_.key(), false, [](size_t) { return false; });
    for (HeldMessage& h : memory_.held) h.used = false;
    phase_ = Phase::kRunning;
    return Status::Ok();
  }
  if (message.job_id != job_id_) return Status::FailedPrecondition();
  if (message.round == 2) {
    if (phase_ == Phase::kRunning) phase_ = Phase::kReporting;
    if (phase_ == Phase::kDone) report_.OnRepeatedRound(2);
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

Status SecureAggregateRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return StartJob(message);
    case nodefl_wire_Envelope_peer_certificate_tag: {
      if (phase_ == Phase::kIdle || message.job_id != job_id_) return Status::Ok();
      roles::KeyedPeer* p = keys_.OnCertificate(message.body.peer_certificate);
      if (p != nullptr && p->state == roles::PeerKeyState::kFailed) ++stats_.key_failures;
      if (p != nullptr && p->state == roles::PeerKeyState::kReady) RetryHeld();
      return Status::Ok();
    }
    case nodefl_wire_Envelope_relay_deliver_tag:
      HandleDelivery(message);
      return Status::Ok();
    case nodefl_wire_Envelope_job_data_tag: {
      const nodefl_wire_JobData& d = message.body.job_data;
      if (phase_ == Phase::kIdle || message.job_id != job_id_ || !IsAggregationKind(d.kind)) {
        ++stats_.rejected;
        return Status::Ok();
      }
      OnClientRecord(d.kind, protocol::BytesOf(d.data));
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

void SecureAggregateRole::OnClientRecord(uint32_t kind, ConstByteSpan data) {
  // Refusals are counted by the client; they never end the connection.
  (void)client_.OnRecord(kind, data);
  WantPeerKeys();
}

void SecureAggregateRole::WantPeerKeys() {
  if (!client_.peers_known() || keyed_aggregation_ == client_.aggregation()) return;
  keyed_aggregation_ = client_.aggregation();
  for (const AggregationPeer& p : client_.peers()) {
    roles::KeyedPeer* k = keys_.FindOrAdd(p.id);
    if (k == nullptr) continue;  // no record: the drain skips this peer
    keys_.Touch(k);
    if (k->state == roles::PeerKeyState::kNone) keys_.Want(k);
  }
  RetryHeld();
}

void SecureAggregateRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  if (phase_ == Phase::kIdle || message.job_id != job_id_) {
    ++stats_.rejected;
    return;
  }
  const ConstByteSpan sealed = protocol::BytesOf(d.sealed);
  roles::KeyedPeer* k = keys_.Find(d.src);
  if (k != nullptr && k->state == roles::PeerKeyState::kReady) {
    (void)OpenAndHand(d.src, sealed);
    return;
  }
  if (k != nullptr && k->state == roles::PeerKeyState::kFailed) {
    ++stats_.rejected;
    return;
  }
  // Not keyed yet (its message overtook our peer list or the key answer).
  if (sealed.size() > sizeof(HeldMessage::sealed)) {
    ++stats_.rejected;
    return;
  }
  for (HeldMessage& h : memory_.held) {
    if (h.used) continue;
    h.used = true;
    h.src = d.src;
    h.size = static_cast<uint16_t>(sealed.size());
    for (size_t i = 0; i < sealed.size(); ++i) h.sealed[i] = sealed[i];
    if (k != nullptr) ++k->waiting;
    return;
  }
  ++stats_.held_dropped;
}

bool SecureAggregateRole::OpenAndHand(uint32_t src, ConstByteSpan sealed) {
  roles::KeyedPeer* k = keys_.Find(src);
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(k->job_keys, src, own_id_, job_id_, sealed, ByteSpan(plain_), &counter);
  if (!opened.ok()) {
    ++stats_.rejected;
    return false;
  }
  if (!k->window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return false;
  }
  ++stats_.opened;
  (void)client_.OnPeerMessage(src, ConstByteSpan(plain_, *opened));
  return true;
}

void SecureAggregateRole::RetryHeld() {
  for (HeldMessage& h : memory_.held) {
    if (!h.used) continue;
    roles::KeyedPeer* k = keys_.Find(h.src);
    if (k == nullptr) continue;
    if (k->state == roles::PeerKeyState::kReady) {
      h.used = false;
      if (k->waiting > 0) --k->waiting;
      (void)OpenAndHand(h.src, ConstByteSpan(h.sealed, h.size));
    } else if (k->state == roles::PeerKeyState::kFailed) {
      h.used = false;
      if (k->waiting > 0) --k->waiting;
      ++stats_.rejected;
    }
  }
}

Status SecureAggregateRole::SendKeyRequests(device::DeviceSession& session) {
  while (keys_.has_wanted() && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_peer_key_request_tag, job_id_, 1);
    if (keys_.FillRequest(&m.body.peer_key_request, NODEFL_MAX_OUTSTANDING_KEY_REQUESTS) == 0) break;
    NODEFL_TRY(session.Send(m));
  }
  return Status::Ok();
}

Status SecureAggregateRole::Drain(device::DeviceSession& session) {
  // The input, once per aggregation, as soon as the client can take it.
  const AggregationClient::State s = client_.state();
  if (s >= AggregationClient::State::kSharing && s <= AggregationClient::State::kMasking &&
      input_aggregation_ != client_.aggregation()) {
    input_aggregation_ = client_.aggregation();
    const Span<uint32_t> in(memory_.aggregation.vector.data(), client_.start().length);
    std::pair<uint64_t, uint32_t> synthetic{params_.input_seed, own_id_};
    const Status filled = input_ != nullptr ? input_(input_context_, client_.start(), in)
                                            : FillSynthetic(&synthetic, client_.start(), in);
    if (filled.ok()) (void)client_.SetInput(Span<const uint32_t>(in.data(), in.size()));
  }
  AggregationClient::Outgoing out;
  while (session.CanSend() && client_.Peek(&out)) {
    if (!out.to_peer) {
      nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 1);
      m.body.job_data.kind = out.kind;
      NODEFL_TRY(protocol::SetBytes(&m.body.job_data.data, out.bytes));
      NODEFL_TRY(session.Send(m));
      client_.Advance();
      continue;
    }
    roles::KeyedPeer* k = keys_.Find(out.peer);
    if (k == nullptr || k->state == roles::PeerKeyState::kFailed) {
      client_.SkipPeer();
      continue;
    }
    if (k->state != roles::PeerKeyState::kReady) break;  // its key is on its way
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, 1);
    m.body.relay_send.dst = out.peer;
    const seal::SealHeader header{own_id_, out.peer, job_id_, next_counter_};
    Result<size_t> sealed = seal::Seal(k->job_keys, header, out.bytes, ByteSpan(m.body.relay_send.sealed.bytes));
    if (!sealed.ok()) {
      client_.SkipPeer();
      continue;
    }
    m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
    NODEFL_TRY(session.Send(m));
    ++next_counter_;
    ++stats_.sealed_sent;
    client_.Advance();
  }
  return Status::Ok();
}

Status SecureAggregateRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE;
  r.code = static_cast<uint32_t>(outcome.code());
  r.sent = client_.stats().completed;
  r.received = stats_.opened;
  r.duplicates = stats_.duplicates + client_.stats().replays;
  r.rejected = stats_.rejected + stats_.held_dropped + client_.stats().records_refused + client_.stats().messages_refused;
  return session.Send(m);
}

Status SecureAggregateRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (job_key_.due()) return Status::Ok();  // the server must hold our key before peers ask for it
  NODEFL_TRY(SendKeyRequests(session));
  NODEFL_TRY(Drain(session));
  if (phase_ == Phase::kReporting && session.CanSend()) {
    NODEFL_TRY(Report(session, 2, stats_.key_failures == 0 ? Status::Ok() : Status::Unauthenticated()));
    phase_ = Phase::kDone;
    job_key_.End();
    keys_.EndJob();
    client_.Reset();
  }
  return Status::Ok();
}

void SecureAggregateRole::OnSessionRestart(bool) {
  keys_.OnRestart();
  if (phase_ == Phase::kRunning || phase_ == Phase::kReporting) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

}  // namespace nodefl::secagg
