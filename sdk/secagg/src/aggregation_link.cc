// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/aggregation_link.h"

#include "nodefl/config.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::secagg {

AggregationLink::AggregationLink(uint32_t own_id, const AggregationLinkMemory& memory,
                                 const tls::TlsCredentials& credentials, Drbg& random)
    : own_id_(own_id),
      memory_(memory),
      keys_(credentials, &crypto::DrbgRandom, &random),
      client_(own_id, memory.aggregation, random) {
  (void)keys_.Bind(own_id_, Span<roles::KeyedPeer>(), memory_.keys);
}

void AggregationLink::StartJob(uint64_t job_id, const seal::JobKeyPair& own_key) {
  job_id_ = job_id;
  own_counter_ = 1;
  keyed_aggregation_ = input_aggregation_ = generation_ = 0;
  stats_ = Stats{};
  client_.Reset();
  keys_.StartJob(own_key, false, [](size_t) { return false; });
  for (HeldMessage& h : memory_.held) h.used = false;
}

void AggregationLink::EndJob() {
  keys_.EndJob();
  client_.Reset();
  for (HeldMessage& h : memory_.held) h.used = false;
}

bool AggregationLink::OnCertificate(const nodefl_wire_PeerCertificate& certificate) {
  roles::KeyedPeer* p = keys_.OnCertificate(certificate);
  if (p == nullptr) return false;
  if (p->state == roles::PeerKeyState::kFailed) ++stats_.key_failures;
  RetryHeld();
  return true;
}

void AggregationLink::OnRecord(uint32_t kind, ConstByteSpan data) {
  // Refusals are counted by the client; they never end the connection.
  (void)client_.OnRecord(kind, data);
  WantPeerKeys();
}

void AggregationLink::WantPeerKeys() {
  if (!client_.peers_known() || keyed_aggregation_ == client_.aggregation()) return;
  keyed_aggregation_ = client_.aggregation();
  ++generation_;
  for (const AggregationPeer& p : client_.peers()) {
    if (known_ != nullptr && known_->Find(p.id) != nullptr) continue;  // keyed by the role
    roles::KeyedPeer* k = keys_.FindOrAdd(p.id);
    if (k == nullptr) continue;  // no record: Pump skips this peer
    keys_.Touch(k);
    if (k->state == roles::PeerKeyState::kNone) keys_.Want(k);
  }
  RetryHeld();
}

void AggregationLink::OnDelivery(const nodefl_wire_RelayDeliver& delivery) {
  const ConstByteSpan sealed = protocol::BytesOf(delivery.sealed);
  roles::KeyedPeer* k = keys_.Find(delivery.src);
  if (k != nullptr && k->state == roles::PeerKeyState::kReady) {
    (void)OpenAndHand(delivery.src, sealed);
    return;
  }
  if ((k != nullptr && k->state == roles::PeerKeyState::kFailed) || sealed.size() > sizeof(HeldMessage::sealed)) {
    ++stats_.rejected;
    return;
  }
  // Not keyed yet: its message overtook our peer list or the key answer.
  for (HeldMessage& h : memory_.held) {
    if (h.used) continue;
    h.used = true;
    h.src = delivery.src;
    h.generation = generation_;
    h.size = static_cast<uint16_t>(sealed.size());
    for (size_t i = 0; i < sealed.size(); ++i) h.sealed[i] = sealed[i];
    if (k != nullptr) ++k->waiting;
    return;
  }
  ++stats_.held_dropped;
}

bool AggregationLink::OpenAndHand(uint32_t src, ConstByteSpan sealed) {
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
  OnPeerPlaintext(src, ConstByteSpan(plain_, *opened));
  return true;
}

void AggregationLink::OnPeerPlaintext(uint32_t src, ConstByteSpan plaintext) {
  ++stats_.opened;
  (void)client_.OnPeerMessage(src, plaintext);  // the client counts what it refuses
}

void AggregationLink::RetryHeld() {
  for (HeldMessage& h : memory_.held) {
    if (!h.used) continue;
    roles::KeyedPeer* k = keys_.Find(h.src);
    const bool ready = k != nullptr && k->state == roles::PeerKeyState::kReady;
    const bool failed = k != nullptr && k->state == roles::PeerKeyState::kFailed;
    const bool stale = k == nullptr && h.generation + 1 < generation_;
    if (!ready && !failed && !stale) continue;
    h.used = false;
    if (k != nullptr && k->waiting > 0) --k->waiting;
    if (ready) {
      (void)OpenAndHand(h.src, ConstByteSpan(h.sealed, h.size));
    } else {
      ++stats_.rejected;
    }
  }
}

void AggregationLink::SetInputIfDue() {
  const AggregationClient::State s = client_.state();
  if (s < AggregationClient::State::kSharing || s > AggregationClient::State::kMasking ||
      input_aggregation_ == client_.aggregation() || input_ == nullptr) {
    return;
  }
  const Span<uint32_t> in(memory_.aggregation.vector.data(), client_.start().length);
  const Status filled = input_(input_context_, client_.start(), in);
  if (filled.code() == StatusCode::kUnavailable) return;  // asked again at the next Pump
  input_aggregation_ = client_.aggregation();
  if (filled.ok()) (void)client_.SetInput(Span<const uint32_t>(in.data(), in.size()));
}

roles::KeyedPeer* AggregationLink::SendKeysOf(uint32_t id) {
  roles::KeyedPeer* k = known_ != nullptr ? known_->Find(id) : nullptr;
  return k != nullptr ? k : keys_.Find(id);
}

Status AggregationLink::Pump(device::DeviceSession& session, uint32_t round, uint32_t max_outstanding) {
  NODEFL_TRY(roles::SendWantedKeyRequests(keys_, session, job_id_, round, max_outstanding));
  SetInputIfDue();
  AggregationClient::Outgoing out;
  while (session.CanSend() && client_.Peek(&out)) {
    if (!out.to_peer) {
      nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, round);
      m.body.job_data.kind = out.kind;
      NODEFL_TRY(protocol::SetBytes(&m.body.job_data.data, out.bytes));
      NODEFL_TRY(session.Send(m));
      stats_.bytes_up += out.bytes.size();
      client_.Advance();
      continue;
    }
    roles::KeyedPeer* k = SendKeysOf(out.peer);
    if (k == nullptr || k->state == roles::PeerKeyState::kFailed) {
      client_.SkipPeer();
      continue;
    }
    if (k->state != roles::PeerKeyState::kReady) break;  // its key is on its way
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, round);
    m.body.relay_send.dst = out.peer;
    const seal::SealHeader header{own_id_, out.peer, job_id_, *counter_};
    Result<size_t> sealed = seal::Seal(k->job_keys, header, out.bytes, ByteSpan(m.body.relay_send.sealed.bytes));
    if (!sealed.ok()) {
      client_.SkipPeer();
      continue;
    }
    m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
    NODEFL_TRY(session.Send(m));
    ++*counter_;
    ++stats_.sealed_sent;
    client_.Advance();
  }
  return Status::Ok();
}

}  // namespace nodefl::secagg
