// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/echo/neighbour_echo.h"

#include <mbedtls/sha256.h>

#include <cstring>

#include "nodefl/core/sorted_search.h"
#include "nodefl/roles/peer_key_requests.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/peer_certificate.h"
#include "nodefl/seal/seal.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::echo {
namespace {

constexpr uint8_t kMagic[8] = {'N', 'F', 'E', 'C', 'H', 'O', '0', '1'};

void StoreLe(uint64_t v, size_t bytes, uint8_t* out) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

NeighbourEchoRole::NeighbourEchoRole(uint32_t own_id, Span<EchoPeer> peers,
                                     const tls::TlsCredentials& credentials,
                                     crypto::RandomFunction random, void* random_context)
    : own_id_(own_id),
      peers_(peers),
      credentials_(credentials),
      random_(random),
      random_context_(random_context) {}

Status NeighbourEchoRole::Init() {
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id == own_id_) return Status::InvalidArgument();
    if (i > 0 && peers_[i - 1].id >= peers_[i].id) return Status::InvalidArgument();
  }
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain() || random_ == nullptr) {
    return Status::FailedPrecondition();
  }
  return Status::Ok();
}

uint32_t NeighbourEchoRole::round() const {
  switch (phase_) {
    case Phase::kIdle: return 0;
    case Phase::kKeys:
    case Phase::kKeysReported: return 1;
    case Phase::kSend:
    case Phase::kDone: return 2;
  }
  return 0;
}

void NeighbourEchoRole::ExpectedPlaintext(uint64_t job_id, uint32_t src, uint32_t dst, uint32_t index,
                                          ByteSpan out) {
  // magic(8) | job(8) | src(4) | dst(4) | SHA-256(those 24 bytes | index)(32)
  // | filler derived from the index up to the payload size.
  NODEFL_CHECK(out.size() >= kEchoHeaderBytes);
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, 8);
  StoreLe(job_id, 8, p + 8);
  StoreLe(src, 4, p + 16);
  StoreLe(dst, 4, p + 20);
  uint8_t hashed[28];
  std::memcpy(hashed, p, 24);
  StoreLe(index, 4, hashed + 24);
  // Hashing cannot fail for these inputs; on error the zero digest simply
  // would not match what the peer computed, which the receiver reports.
  if (mbedtls_sha256_ret(hashed, sizeof(hashed), p + 24, 0) != 0) std::memset(p + 24, 0, 32);
  for (size_t i = kEchoHeaderBytes; i < out.size(); ++i) {
    p[i] = static_cast<uint8_t>(i * 31u + index);
  }
}

EchoPeer* NeighbourEchoRole::FindPeer(uint32_t id) {
  return FindSorted(peers_, id, [](const EchoPeer& p) { return p.id; });
}

bool NeighbourEchoRole::AllKeysSettled() const { return keys_settled_ == peers_.size(); }

Status NeighbourEchoRole::StartJob(const nodefl_wire_Envelope& message, uint64_t now_us) {
  const nodefl_wire_JobStart& start = message.body.job_start;
  deadline_us_ = now_us + uint64_t{start.deadline_ms} * 1000;
  deadline_passed_ = false;
  if (message.round == 1) {
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      // The job this role runs, again (a reconnect, or a replay): keep the
      // ephemeral key and the counters under it; only repeat the report.
      report_.OnRepeatedRound(1);
      return Status::Ok();
    }
    const ConstByteSpan params = protocol::BytesOf(start.parameters);
    const Result<EchoParameters> decoded = DecodeEchoParameters(params);
    if (!decoded.ok()) return decoded.status();
    messages_per_edge_ = decoded->messages_per_edge;
    payload_bytes_ = decoded->payload_bytes;
    // A fresh ephemeral key, and with it fresh counters and windows below.
    const Status keyed = job_key_.Begin(message.job_id, params.first(kEchoJobSaltBytes), random_, random_context_);
    if (!keyed.ok()) {
      phase_ = Phase::kIdle;
      return keyed;
    }
    job_id_ = message.job_id;
    phase_ = Phase::kKeys;
    directory_ = start.peer_directory;
    directory_rx_.Reset();
    stats_ = Stats{};
    request_cursor_ = send_cursor_ = 0;
    send_pass_ = 0;
    keys_settled_ = 0;
    outstanding_requests_ = 0;
    report_.Reset();
    for (EchoPeer& p : peers_) {
      p.job_keys.Wipe();
      p.window = seal::ReplayWindow();
      p.next_counter = 1;
      p.sent = p.received = 0;
      p.key_ready = false;
      p.gone = false;
      // Every job needs each neighbour's job key; long-term pair keys
      // survive across jobs, so a known neighbour's certificate is not
      // verified again. With a directory nothing is requested: every
      // neighbour awaits its entry.
      p.key_requested = directory_;
      p.key_answered = false;
    }
    return Status::Ok();
  }
  if (message.round == 2) {
    if (message.job_id != job_id_ || phase_ == Phase::kIdle) return Status::FailedPrecondition();
    if (phase_ == Phase::kSend || phase_ == Phase::kDone) {
      // Round 2 again (a reconnect, or a replay): go on; repeat the report.
      report_.OnRepeatedRound(2);
      return Status::Ok();
    }
    phase_ = Phase::kSend;
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

Status NeighbourEchoRole::HandleCertificate(const nodefl_wire_PeerCertificate& cert) {
  EchoPeer* peer = FindPeer(cert.device_id);
  // Certificates we did not ask for (or twice) are ignored, not trusted.
  if (peer == nullptr || !peer->key_requested || peer->key_answered) return Status::Ok();
  peer->key_answered = true;
  if (outstanding_requests_ > 0) --outstanding_requests_;
  ++keys_settled_;
  if (!cert.found) {
    ++stats_.key_failures;
    return Status::Ok();
  }
  Status s;
  if (!peer->pair_keys.valid) {
    seal::PeerPublicKey public_key;
    s = seal::VerifyPeerCertificate(credentials_, protocol::BytesOf(cert.certificate_der), peer->id, &public_key);
    if (s.ok()) {
      s = seal::DerivePairKeys(credentials_, public_key, own_id_, peer->id, random_, random_context_,
                               &peer->pair_keys);
    }
  }
  if (s.ok()) {
    s = seal::DeriveJobKeys(peer->pair_keys, job_key_.key(), own_id_, protocol::BytesOf(cert.job_key), random_,
                            random_context_, &peer->job_keys);
  }
  if (s.ok()) {
    peer->key_ready = true;
  } else {
    peer->pair_keys.Wipe();
    ++stats_.key_failures;
  }
  return Status::Ok();
}

void NeighbourEchoRole::OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry) {
  auto* self = static_cast<NeighbourEchoRole*>(context);
  (void)self->HandleCertificate(entry);  // only neighbours' entries are taken
}

Status NeighbourEchoRole::HandleDirectoryChunk(const nodefl_wire_Envelope& message) {
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

Status NeighbourEchoRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  EchoPeer* peer = FindPeer(d.src);
  if (peer == nullptr || !peer->key_ready || message.job_id != job_id_) {
    ++stats_.rejected;
    return Status::Ok();
  }
  uint8_t plaintext[seal::kMaxSealPlaintextBytes];
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(peer->job_keys, d.src, own_id_, job_id_, protocol::BytesOf(d.sealed),
                                     ByteSpan(plaintext), &counter);
  if (!opened.ok()) {
    ++stats_.rejected;
    return Status::Ok();
  }
  if (!peer->window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return Status::Ok();
  }
  // Message k of this job carries counter k, so the counter names the
  // content the sender must have sealed.
  uint8_t expected[seal::kMaxSealPlaintextBytes];
  if (counter > messages_per_edge_ || *opened != payload_bytes_) {
    ++stats_.rejected;
    return Status::Ok();
  }
  ExpectedPlaintext(job_id_, d.src, own_id_, static_cast<uint32_t>(counter), ByteSpan(expected, payload_bytes_));
  if (std::memcmp(plaintext, expected, payload_bytes_) != 0) {
    ++stats_.rejected;
    return Status::Ok();
  }
  ++peer->received;
  ++stats_.received;
  // A neighbour declared gone sent this before it went: one fewer abandoned.
  if (peer->gone && stats_.abandoned > 0) --stats_.abandoned;
  return Status::Ok();
}

Status NeighbourEchoRole::HandlePeersGone(const nodefl_wire_Envelope& message) {
  const nodefl_wire_JobData& data = message.body.job_data;
  if (data.kind != kEchoRecordPeersGone || message.job_id != job_id_ || phase_ == Phase::kIdle) {
    return Status::FailedPrecondition();
  }
  const ConstByteSpan record = protocol::BytesOf(data.data);
  const Result<uint32_t> count = DecodeEchoPeersGone(record);
  if (!count.ok()) return count.status();
  for (uint32_t i = 0; i < *count; ++i) {
    EchoPeer* peer = FindPeer(EchoPeersGoneAt(record, i));
    // Ids of non-neighbours are the rest of the fleet's: not ours to track.
    if (peer == nullptr || peer->gone) continue;
    peer->gone = true;
    // Only neighbours whose key is ready are expected to send (round 1).
    if (peer->key_ready && peer->received < messages_per_edge_) {
      stats_.abandoned += messages_per_edge_ - peer->received;
    }
  }
  return Status::Ok();
}

Status NeighbourEchoRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return StartJob(message, now_us_);
    case nodefl_wire_Envelope_peer_certificate_tag:
      if (message.job_id != job_id_ || phase_ != Phase::kKeys) return Status::Ok();
      return HandleCertificate(message.body.peer_certificate);
    case nodefl_wire_Envelope_relay_deliver_tag:
      return HandleDelivery(message);
    case nodefl_wire_Envelope_job_data_tag:
      return HandlePeersGone(message);
    case nodefl_wire_Envelope_chunk_header_tag:
    case nodefl_wire_Envelope_chunk_tag:
      return HandleDirectoryChunk(message);
    default:
      return Status::Unimplemented();
  }
}

Status NeighbourEchoRole::SendKeyRequests(device::DeviceSession& session) {
  // The server holds our job key before anyone asks it for it.
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (job_key_.due() || directory_) return Status::Ok();
  return roles::SendPeerKeyRequests(session, job_id_, 1, peers_, &request_cursor_, &outstanding_requests_,
                             kEchoMaxOutstandingKeyRequests);
}

Status NeighbourEchoRole::SendSealed(device::DeviceSession& session) {
  // Round-robin over neighbours, one message each per pass, so that every
  // neighbour's stream makes progress even when output space is scarce.
  uint8_t plaintext[seal::kMaxSealPlaintextBytes];
  while (session.CanSend()) {
    if (send_cursor_ == peers_.size()) {
      if (send_pass_ + 1 >= messages_per_edge_) break;
      ++send_pass_;
      send_cursor_ = 0;
    }
    EchoPeer& p = peers_[send_cursor_++];
    if (!p.key_ready || p.sent > send_pass_) continue;
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, 2);
    m.body.relay_send.dst = p.id;
    const uint64_t counter = p.next_counter;
    ExpectedPlaintext(job_id_, own_id_, p.id, static_cast<uint32_t>(counter), ByteSpan(plaintext, payload_bytes_));
    const seal::SealHeader header{own_id_, p.id, job_id_, counter};
    Result<size_t> sealed = seal::Seal(p.job_keys, header, ConstByteSpan(plaintext, payload_bytes_),
                                       ByteSpan(m.body.relay_send.sealed.bytes));
    if (!sealed.ok()) return sealed.status();
    m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
    NODEFL_TRY(session.Send(m));
    ++p.next_counter;
    ++p.sent;
    ++stats_.sent;
  }
  return Status::Ok();
}

void NeighbourEchoRole::OnSessionRestart(bool /*resumed*/) {
  // Certificate requests and answers in flight died with the old
  // connection: ask again for every neighbour still unanswered.
  // (With a directory there are no requests to repeat; a directory cut off
  // by the reconnect is not sent again, and its missing neighbours fail at
  // the round's deadline rather than being named in requests.)
  if (phase_ == Phase::kKeys && !directory_) {
    roles::ForgetUnansweredPeerKeyRequests(peers_, &request_cursor_, &outstanding_requests_);
  }
  // The server keeps our job key, but announcing it again costs one frame
  // and covers a server that lost it.
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) job_key_.OnSessionRestart();
  // A report may not have reached the server: repeat the latest one.
  report_.OnSessionRestart();
}

Status NeighbourEchoRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
  r.code = static_cast<uint32_t>(outcome.code());
  r.expected = stats_.expected;
  r.sent = stats_.sent;
  r.received = stats_.received;
  r.duplicates = stats_.duplicates;
  r.rejected = stats_.rejected;
  r.abandoned = stats_.abandoned;
  return session.Send(m);
}

Status NeighbourEchoRole::OnPoll(uint64_t now_us, device::DeviceSession& session) {
  now_us_ = now_us;
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  if (deadline_us_ != 0 && now_us > deadline_us_) deadline_passed_ = true;

  if (phase_ == Phase::kKeys) {
    NODEFL_TRY(SendKeyRequests(session));
    if ((AllKeysSettled() || deadline_passed_) && session.CanSend()) {
      stats_.expected = 0;
      for (const EchoPeer& p : peers_) stats_.expected += p.key_ready ? messages_per_edge_ : 0;
      const bool ok = AllKeysSettled() && stats_.key_failures == 0;
      NODEFL_TRY(Report(session, 1, ok ? Status::Ok() : Status::Unauthenticated()));
      phase_ = Phase::kKeysReported;
    }
    return Status::Ok();
  }
  if (phase_ == Phase::kSend) {
    NODEFL_TRY(SendSealed(session));
    const bool all_sent = send_cursor_ == peers_.size() && send_pass_ + 1 >= messages_per_edge_;
    // Everything expected arrived or was abandoned (its sender is gone).
    const bool settled = all_sent && stats_.received + stats_.abandoned == stats_.expected;
    if ((settled || deadline_passed_) && session.CanSend()) {
      const Status outcome = !settled                ? Status::DeadlineExceeded()
                             : stats_.abandoned > 0 ? Status::Unavailable()
                                                    : Status::Ok();
      NODEFL_TRY(Report(session, 2, outcome));
      phase_ = Phase::kDone;
      // Nothing more is sealed or opened in this job: forget its keys.
      job_key_.End();
      for (EchoPeer& p : peers_) {
        p.job_keys.Wipe();
        p.key_ready = false;
      }
    }
  }
  return Status::Ok();
}

}  // namespace nodefl::echo
