// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/walk_role.h"

#include <cstring>

#include "nodefl/config.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/seal/seal.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::fedwalk {
namespace {

// Certificate requests in flight per device, as in the echo role: keeps the
// server's answer queue and the device's verification work bounded.
constexpr uint32_t kMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;

bool SameParameters(const WalkParameters& a, const WalkParameters& b) {
  return a.mode == b.mode && a.length == b.length && a.p == b.p && a.epsilon == b.epsilon &&
         a.epsilon_per_encoding == b.epsilon_per_encoding && a.max_pending_walks == b.max_pending_walks &&
         a.predictor == b.predictor && std::memcmp(a.salt, b.salt, sizeof(a.salt)) == 0;
}

}  // namespace

WalkInputs WalkInputsFrom(const FedWalkHctRole& hct) {
  WalkInputs in;
  in.neighbours = hct.neighbours();
  in.codebook_pool = hct.codebook_pool();
  in.own_row = hct.OwnCodebookRow();
  in.own_truncated_mass = hct.OwnCodebookTruncatedMass();
  in.tree = hct.tree();
  in.bin_plan = hct.bin_plan();
  in.bins = hct.parameters().bins;
  in.vertex_count = hct.parameters().vertex_count;
  in.hct = &hct;
  in.hct_job_id = hct.job_id();
  return in;
}

FedWalkWalkRole::FedWalkWalkRole(uint32_t own_id, const WalkStorage& storage,
                                 const tls::TlsCredentials& credentials, crypto::RandomFunction random,
                                 void* random_context, Drbg& rng, PrivacyLedger& ledger)
    : own_id_(own_id),
      storage_(storage),
      credentials_(credentials),
      random_(random),
      random_context_(random_context),
      rng_(rng),
      ledger_(ledger),
      peers_(credentials, random, random_context) {}

Status FedWalkWalkRole::Init(const WalkInputs& in) {
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) return Status::FailedPrecondition();
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain()) return Status::FailedPrecondition();
  if (in.neighbours.size() > storage_.neighbour_peers.size() || in.bins > kMaxBins ||
      (!in.bin_plan.empty() && in.bin_plan.size() != in.vertex_count)) {
    return Status::InvalidArgument();
  }
  const Span<roles::KeyedPeer> records = storage_.neighbour_peers.first(in.neighbours.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].id != in.neighbours[i].id) {
      records[i].pair_keys.Wipe();
      records[i].id = in.neighbours[i].id;
    }
  }
  NODEFL_TRY(peers_.Bind(own_id_, records, storage_.peer_cache));
  // What the encoder costs over the rows this device will sample from,
  // measured once: the rows do not change during a job.
  NODEFL_TRY_ASSIGN(encoder_cost_, MeasureEncoderRows(in.own_row, in.own_truncated_mass, in.neighbours,
                                                      in.codebook_pool));
  inputs_ = in;

  // The predictor needs the tree indexed; without it every step takes a
  // neighbour (walk_format.h: an empty pool falls back to step 5).
  tree_index_ = TreeIndex();
  if (!in.tree.empty() && !in.bin_plan.empty() && in.bins > 0) {
    if (!tree_index_.Build(in.tree, in.vertex_count, storage_.tree_parent, storage_.tree_leaf_of_vertex).ok()) {
      tree_index_ = TreeIndex();
    }
  }
  context_ = WalkStepContext();
  context_.own_id = own_id_;
  context_.neighbours = in.neighbours;
  context_.codebook_pool = in.codebook_pool;
  context_.walk_neighbours = CountWalkNeighbours(in.neighbours);
  context_.own_row = in.own_row;
  if (!tree_index_.empty()) {
    CountLeavesPerBin(tree_index_, in.bin_plan, Span<uint32_t>(bin_sizes_, in.bins));
    context_.tree = &tree_index_;
    context_.bin_plan = in.bin_plan;
    context_.bin_sizes = Span<const uint32_t>(bin_sizes_, in.bins);
  }
  initialised_ = true;
  return Status::Ok();
}

uint32_t FedWalkWalkRole::round() const { return phase_ == Phase::kIdle ? 0 : round_; }

// ---- Job and rounds ---------------------------------------------------------------

void FedWalkWalkRole::Abandon() {
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return;
  phase_ = Phase::kIdle;
  round_ = 0;
  deadline_pending_ = false;
  resend_report_ = false;
  last_report_round_ = 0;
}

Status FedWalkWalkRole::StartJob(uint64_t job_id, const WalkParameters& params, bool directory) {
  // Bound to an HCT role's storage that another job has rewritten since:
  // the tree index and the bin sizes no longer match it.
  if (inputs_.hct != nullptr && (inputs_.hct->job_id() != inputs_.hct_job_id || !inputs_.hct->finished())) {
    return Status::FailedPrecondition();
  }
  // A fresh ephemeral key, and with it a fresh counter below.
  NODEFL_TRY(job_key_.Begin(job_id, ConstByteSpan(params.salt), random_, random_context_));
  job_id_ = job_id;
  params_ = params;
  stats_ = Stats{};
  next_counter_ = 1;
  ledger_.BeginJob(job_id);
  // The larger of the server's claim and the device's measurement.
  encoding_cost_ = ReleaseCost();
  encoding_cost_.epsilon =
      encoder_cost_.epsilon > params.epsilon_per_encoding ? encoder_cost_.epsilon : params.epsilon_per_encoding;
  const double delta = encoder_cost_.delta + encoder_cost_.truncated_mass;
  encoding_cost_.delta = delta > 1.0 ? 1.0 : delta;
  encoding_cost_.unbounded = encoder_cost_.unbounded;
  encoding_cost_.unbounded_against_server = true;
  edge_epsilon_ = 0.0;
  send_cursor_ = 0;
  last_report_round_ = 0;
  resend_report_ = false;
  context_.p = params.p;
  context_.predictor = params.predictor;
  // Slots are cut for this job's longest walk.
  const size_t slot_bytes = WalkSlotBytes(params.length);
  queue_.Bind(storage_.slots, storage_.slot_memory, slot_bytes, params.max_pending_walks);
  refused_ = queue_.capacity() == 0 || storage_.scratch.size() < slot_bytes;
  directory_ = directory;
  directory_rx_.Reset();
  peers_.StartJob(job_key_.key(), directory, [this](size_t i) {
    return !refused_ && inputs_.neighbours[i].has_codebook_row;
  });
  phase_ = Phase::kKeys;
  return Status::Ok();
}

void FedWalkWalkRole::EnterRound(uint32_t round, uint32_t deadline_ms) {
  round_ = round;
  deadline_pending_ = true;
  deadline_ms_ = deadline_ms;
  deadline_us_ = 0;
  deadline_passed_ = false;
  if (round == kWalkRoundWalks) phase_ = Phase::kWalks;
  if (round == kWalkRoundReport) {
    // The server has moved on: whatever is still held ends here.
    phase_ = Phase::kReport;
    EndWaitingWalks(/*only_for_keys=*/false);
  }
}

Status FedWalkWalkRole::OnJobStart(const nodefl_wire_Envelope& message) {
  const uint32_t round = message.round;
  const uint32_t deadline_ms = message.body.job_start.deadline_ms;
  const bool this_job = phase_ != Phase::kIdle && message.job_id == job_id_;
  if (round == kWalkRoundKeys) {
    NODEFL_TRY_ASSIGN(const WalkParameters params,
                      DecodeWalkParameters(protocol::BytesOf(message.body.job_start.parameters)));
    if (this_job) {
      // The same job again (after a reconnect): same parameters, and no
      // way back from a later round.
      if (!SameParameters(params, params_)) return Status::InvalidArgument();
      if (round_ != kWalkRoundKeys) return Status::FailedPrecondition();
      if (last_report_round_ == kWalkRoundKeys) resend_report_ = true;
      return Status::Ok();
    }
    NODEFL_TRY(StartJob(message.job_id, params, message.body.job_start.peer_directory));
    EnterRound(kWalkRoundKeys, deadline_ms);
    return Status::Ok();
  }
  if (round != kWalkRoundWalks && round != kWalkRoundReport) return Status::InvalidArgument();
  if (!this_job || round < round_) return Status::FailedPrecondition();
  if (round == round_) {
    if (last_report_round_ == round) resend_report_ = true;
    return Status::Ok();
  }
  EnterRound(round, deadline_ms);
  return Status::Ok();
}

void FedWalkWalkRole::OnSessionRestart(bool /*resumed*/) {
  // Certificate requests and answers in flight died with the connection.
  peers_.OnRestart();
  // The server keeps our job key; announcing it again covers one that lost it.
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) job_key_.OnSessionRestart();
  // A report may not have reached the server: repeat the latest one.
  if (last_report_round_ != 0) resend_report_ = true;
}

// ---- Incoming messages --------------------------------------------------------------

Status FedWalkWalkRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) {
  if (!initialised_) return Status::FailedPrecondition();
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return OnJobStart(message);
    case nodefl_wire_Envelope_peer_certificate_tag:
      if (phase_ != Phase::kIdle && message.job_id == job_id_) HandleCertificate(message.body.peer_certificate);
      return Status::Ok();
    case nodefl_wire_Envelope_relay_deliver_tag:
      HandleDelivery(message, session);
      return Status::Ok();
    case nodefl_wire_Envelope_job_data_tag:
      HandleStartWalks(message, session);
      return Status::Ok();
    case nodefl_wire_Envelope_chunk_header_tag:
    case nodefl_wire_Envelope_chunk_tag:
      return HandleDirectoryChunk(message);
    default:
      return Status::Unimplemented();
  }
}

void FedWalkWalkRole::HandleStartWalks(const nodefl_wire_Envelope& message, device::DeviceSession& session) {
  const nodefl_wire_JobData& data = message.body.job_data;
  if (phase_ == Phase::kIdle || message.job_id != job_id_ ||
      data.kind != static_cast<uint32_t>(WalkRecord::kStartWalks)) {
    ++stats_.rejected;
    return;
  }
  const ConstByteSpan record = protocol::BytesOf(data.data);
  const Result<uint32_t> count = DecodeStartWalks(record);
  if (!count.ok()) {
    ++stats_.rejected;
    return;
  }
  const bool taking = !refused_ && phase_ != Phase::kReport && phase_ != Phase::kDone;
  // The walks that find no slot are answered with one kDroppedStarts
  // record, built in the session's outgoing envelope as they come (nothing
  // else is sent while this record is handled; the session guarantees room
  // for this one message).
  nodefl_wire_Envelope* dropped_record = nullptr;
  uint32_t dropped = 0;
  for (uint32_t i = 0; i < *count; ++i) {
    const StartWalk walk = StartWalkAt(record, i);
    WalkSlot* slot = nullptr;
    if (taking && walk.length <= params_.length) slot = queue_.Acquire(SlotState::kResult);
    if (slot == nullptr) {
      if (dropped_record == nullptr) {
        dropped_record = &session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, kWalkRoundWalks);
        dropped_record->body.job_data.kind = static_cast<uint32_t>(WalkRecord::kDroppedStarts);
      }
      StoreU32Le(walk.walk_id, dropped_record->body.job_data.data.bytes + 4 + 4 * size_t{dropped});
      ++dropped;
      continue;
    }
    ++stats_.started;
    slot->header = WalkHeader{};
    slot->header.remaining = walk.length;
    slot->header.walk_id = walk.walk_id;
    Step(slot);
  }
  if (dropped_record == nullptr) return;
  StoreU32Le(dropped, dropped_record->body.job_data.data.bytes);
  dropped_record->body.job_data.data.size = static_cast<pb_size_t>(4 + 4 * size_t{dropped});
  if (session.Send(*dropped_record).ok()) {
    stats_.dropped_starts += dropped;
  } else {
    stats_.lost += dropped;  // cannot happen while the session keeps its promise
  }
}

bool FedWalkWalkRole::OpenWalk(roles::KeyedPeer* peer, ConstByteSpan sealed, ByteSpan out, WalkHeader* header) {
  uint64_t counter = 0;
  const Result<size_t> opened = seal::Open(peer->job_keys, peer->id, own_id_, job_id_, sealed, out, &counter);
  if (!opened.ok()) {
    ++stats_.rejected;
    return false;
  }
  // Only an authenticated counter may move the window (replay_window.h).
  if (!peer->window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return false;
  }
  const Result<WalkHeader> h = DecodeWalkMessage(ConstByteSpan(out.data(), *opened));
  if (!h.ok() || WalkLength(*h) > params_.length) {
    ++stats_.rejected;
    return false;
  }
  *header = *h;
  ++stats_.received;
  return true;
}

void FedWalkWalkRole::HandleDelivery(const nodefl_wire_Envelope& message, device::DeviceSession& session) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  const ConstByteSpan sealed = protocol::BytesOf(d.sealed);
  if (phase_ == Phase::kIdle || message.job_id != job_id_ || d.src == own_id_) {
    ++stats_.rejected;
    return;
  }
  if (refused_) {
    ++stats_.lost;
    return;
  }
  roles::KeyedPeer* peer = peers_.FindOrAdd(d.src);
  if (peer == nullptr || peer->state == roles::PeerKeyState::kFailed) {
    // No record to hold a key in, or no key to be had: unreadable.
    ++stats_.lost;
    return;
  }
  const bool late = phase_ == Phase::kReport || phase_ == Phase::kDone;
  peers_.Touch(peer);
  if (peer->state == roles::PeerKeyState::kReady) {
    WalkSlot* slot = AcquireMakingRoom(SlotState::kResult, session);
    if (slot == nullptr) {
      // Queue full: the walk ends here, as it is, straight to the server.
      WalkHeader h;
      if (!OpenWalk(peer, sealed, storage_.scratch, &h)) return;
      const ConstByteSpan ids(storage_.scratch.data() + kWalkMessageHeaderBytes, 4 * size_t{h.count});
      if (SendDroppedNow(session, h, ids).ok()) {
        ++stats_.dropped;
      } else {
        ++stats_.lost;
      }
      return;
    }
    WalkHeader h;
    if (!OpenWalk(peer, sealed, queue_.Bytes(slot), &h)) {
      queue_.Release(slot);
      return;
    }
    slot->header = h;
    if (late) {
      EndHere(slot, WalkOutcome::kDropped);
    } else {
      Step(slot);
    }
    return;
  }
  // The sender's key is not there yet (a 2-hop jump from a stranger, or a
  // neighbour whose certificate is still on its way): hold the sealed walk.
  if (late || deadline_passed_) {
    ++stats_.lost;
    return;
  }
  if (sealed.size() > queue_.slot_bytes()) {
    ++stats_.rejected;  // longer than any walk of this job
    return;
  }
  WalkSlot* slot = AcquireMakingRoom(SlotState::kSealed, session);
  if (slot == nullptr) {
    ++stats_.lost;
    return;
  }
  std::memcpy(queue_.Bytes(slot).data(), sealed.data(), sealed.size());
  slot->sealed_bytes = static_cast<uint16_t>(sealed.size());
  AttachPeer(slot, d.src);
  peers_.Want(peer);
}

void FedWalkWalkRole::OnDirectoryEntry(void* context, const nodefl_wire_PeerCertificate& entry) {
  static_cast<FedWalkWalkRole*>(context)->HandleCertificate(entry);  // only awaited neighbours are taken
}

Status FedWalkWalkRole::HandleDirectoryChunk(const nodefl_wire_Envelope& message) {
  if (!directory_ || phase_ == Phase::kIdle || message.job_id != job_id_) return Status::FailedPrecondition();
  NODEFL_TRY(message.which_body == nodefl_wire_Envelope_chunk_header_tag
                 ? directory_rx_.OnHeader(message.body.chunk_header)
                 : directory_rx_.OnChunk(message.body.chunk));
  if (directory_rx_.complete()) peers_.EndDirectory();
  return Status::Ok();
}

void FedWalkWalkRole::HandleCertificate(const nodefl_wire_PeerCertificate& certificate) {
  roles::KeyedPeer* peer = peers_.OnCertificate(certificate);
  if (peer == nullptr) return;
  if (peer->state == roles::PeerKeyState::kReady) {
    OpenHeldFrom(peer);
    return;
  }
  // No key for this peer: what waited on it ends.
  for (size_t i = 0; i < queue_.capacity(); ++i) {
    WalkSlot& s = queue_.at(i);
    if (s.peer != peer->id) continue;
    if (s.state == SlotState::kSealed) {
      Abandon(&s);
    } else if (s.state == SlotState::kForward) {
      --s.header.hops;  // the message is not sent
      EndHere(&s, WalkOutcome::kDropped);
    }
  }
}

void FedWalkWalkRole::OpenHeldFrom(roles::KeyedPeer* peer) {
  // Pinned while its walks are opened: their steps may add cache records,
  // and evicting this one would change what `peer` points at.
  ++peer->waiting;
  const bool late = phase_ == Phase::kReport || phase_ == Phase::kDone;
  for (;;) {
    // Oldest first: the replay window accepts a sender's counters in
    // increasing order only, the order they were relayed in.
    WalkSlot* oldest = nullptr;
    for (size_t i = 0; i < queue_.capacity(); ++i) {
      WalkSlot& s = queue_.at(i);
      if (s.state == SlotState::kSealed && s.peer == peer->id && (oldest == nullptr || s.seq < oldest->seq)) {
        oldest = &s;
      }
    }
    if (oldest == nullptr) break;
    DetachPeer(oldest);
    const ByteSpan bytes = queue_.Bytes(oldest);
    WalkHeader h;
    if (!OpenWalk(peer, ConstByteSpan(bytes.data(), oldest->sealed_bytes), storage_.scratch, &h)) {
      queue_.Release(oldest);
      continue;
    }
    std::memcpy(bytes.data(), storage_.scratch.data(), WalkMessageBytes(h.count));
    oldest->state = SlotState::kResult;
    oldest->header = h;
    if (late) {
      EndHere(oldest, WalkOutcome::kDropped);
    } else {
      Step(oldest);
    }
  }
  --peer->waiting;
}

// ---- Walk steps and their destinations ------------------------------------------------

void FedWalkWalkRole::Step(WalkSlot* slot) {
  const WalkHeader before = slot->header;
  const Result<WalkStepResult> r = RunWalkStep(context_, &slot->header, queue_.Ids(slot), rng_, storage_.pool);
  if (!r.ok()) {
    // A failed DRBG or a corrupt row: the walk cannot go on, and keeps
    // only what it had.
    slot->header = before;
    EndHere(slot, WalkOutcome::kDropped);
    return;
  }
  if (r->encodings > 0) {
    // Accounted before anything leaves the device: encodings the ledger
    // cannot hold are taken back. Per edge, everything the walk encodes
    // from here on depends on this device's choice (walk_role.h).
    ReleaseCost cost = encoding_cost_;
    cost.edge_epsilon = static_cast<double>(r->encodings + uint32_t{slot->header.remaining}) * encoding_cost_.epsilon;
    const Status recorded = ledger_.Record(kPhaseWalks, Mechanism::kExponential, params_.mode, cost, r->encodings);
    if (!recorded.ok()) {
      slot->header = before;
      EndHere(slot, WalkOutcome::kDropped);
      return;
    }
    stats_.encodings += r->encodings;
    edge_epsilon_ += cost.edge_epsilon;
  }
  if (r->hop == WalkHop::kServer) {
    EndHere(slot, r->outcome);
    return;
  }
  if (r->hop == WalkHop::kPredicted) ++stats_.predicted;
  Route(slot, r->destination);
}

void FedWalkWalkRole::Route(WalkSlot* slot, uint32_t destination) {
  roles::KeyedPeer* peer = peers_.FindOrAdd(destination);
  const bool no_key = peer == nullptr || peer->state == roles::PeerKeyState::kFailed ||
                      (deadline_passed_ && peer->state != roles::PeerKeyState::kReady);
  if (no_key) {
    --slot->header.hops;  // the message is not sent
    EndHere(slot, WalkOutcome::kDropped);
    return;
  }
  slot->state = SlotState::kForward;
  AttachPeer(slot, destination);
  peers_.Want(peer);
  peers_.Touch(peer);
}

void FedWalkWalkRole::AttachPeer(WalkSlot* slot, uint32_t id) {
  slot->peer = id;
  if (roles::KeyedPeer* p = peers_.Find(id)) ++p->waiting;
}

void FedWalkWalkRole::DetachPeer(WalkSlot* slot) {
  if (slot->state != SlotState::kSealed && slot->state != SlotState::kForward) return;
  roles::KeyedPeer* p = peers_.Find(slot->peer);
  if (p != nullptr && p->waiting > 0) --p->waiting;
}

void FedWalkWalkRole::EndHere(WalkSlot* slot, WalkOutcome outcome) {
  DetachPeer(slot);
  slot->state = SlotState::kResult;
  slot->outcome = outcome;
}

void FedWalkWalkRole::Abandon(WalkSlot* slot) {
  DetachPeer(slot);
  queue_.Release(slot);
  ++stats_.lost;
}

void FedWalkWalkRole::EndWaitingWalks(bool only_for_keys) {
  for (size_t i = 0; i < queue_.capacity(); ++i) {
    WalkSlot& s = queue_.at(i);
    if (s.state == SlotState::kSealed) {
      Abandon(&s);
    } else if (s.state == SlotState::kForward) {
      const roles::KeyedPeer* p = peers_.Find(s.peer);
      if (only_for_keys && p != nullptr && p->state == roles::PeerKeyState::kReady) continue;
      --s.header.hops;
      EndHere(&s, WalkOutcome::kDropped);
    }
  }
}

// ---- Outgoing messages ---------------------------------------------------------------

Status FedWalkWalkRole::SendDroppedNow(device::DeviceSession& session, const WalkHeader& h, ConstByteSpan ids) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, kWalkRoundWalks);
  m.body.job_data.kind = static_cast<uint32_t>(WalkRecord::kWalkResult);
  const WalkResultHeader result{h.walk_id, WalkOutcome::kDropped, h.hops, h.count};
  NODEFL_TRY_ASSIGN(const size_t bytes, EncodeWalkResult(result, ids, ByteSpan(m.body.job_data.data.bytes)));
  m.body.job_data.data.size = static_cast<pb_size_t>(bytes);
  return session.Send(m);
}

Status FedWalkWalkRole::SendResult(device::DeviceSession& session, WalkSlot* slot) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, kWalkRoundWalks);
  m.body.job_data.kind = static_cast<uint32_t>(WalkRecord::kWalkResult);
  const WalkHeader& h = slot->header;
  const WalkResultHeader result{h.walk_id, slot->outcome, h.hops, h.count};
  const ConstByteSpan ids = queue_.Ids(slot).first(4 * size_t{h.count});
  NODEFL_TRY_ASSIGN(const size_t bytes, EncodeWalkResult(result, ids, ByteSpan(m.body.job_data.data.bytes)));
  m.body.job_data.data.size = static_cast<pb_size_t>(bytes);
  NODEFL_TRY(session.Send(m));
  if (slot->outcome == WalkOutcome::kDropped) {
    ++stats_.dropped;
  } else {
    ++stats_.finished;
  }
  queue_.Release(slot);
  return Status::Ok();
}

Status FedWalkWalkRole::SendForward(device::DeviceSession& session, WalkSlot* slot, roles::KeyedPeer* peer) {
  const ByteSpan bytes = queue_.Bytes(slot);
  if (!EncodeWalkHeader(slot->header, bytes).ok()) {
    // Cannot happen for a header a step produced; never fatal either way.
    --slot->header.hops;
    EndHere(slot, WalkOutcome::kDropped);
    return Status::Ok();
  }
  // Padded to the job's one walk-message size (walk_format.h); the slot
  // holds WalkSlotBytes(l), room for it.
  const size_t used = WalkMessageBytes(slot->header.count);
  const size_t padded = PaddedWalkMessageBytes(slot->header);
  for (size_t i = used; i < padded; ++i) bytes[i] = 0;
  const ConstByteSpan plaintext(bytes.data(), padded);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, kWalkRoundWalks);
  m.body.relay_send.dst = peer->id;
  const seal::SealHeader header{own_id_, peer->id, job_id_, next_counter_};
  const Result<size_t> sealed = seal::Seal(peer->job_keys, header, plaintext, ByteSpan(m.body.relay_send.sealed.bytes));
  // A counter is used up once anything was sealed under it.
  ++next_counter_;
  if (!sealed.ok()) {
    --slot->header.hops;
    EndHere(slot, WalkOutcome::kDropped);
    return Status::Ok();
  }
  m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
  NODEFL_TRY(session.Send(m));
  ++stats_.forwarded;
  peers_.Touch(peer);
  DetachPeer(slot);
  queue_.Release(slot);
  return Status::Ok();
}

Status FedWalkWalkRole::SendKeyRequests(device::DeviceSession& session) {
  // The server holds our job key before anyone asks it for it.
  NODEFL_TRY(job_key_.SendIfDue(session, kWalkRoundKeys));
  if (job_key_.due()) return Status::Ok();
  return roles::SendWantedKeyRequests(peers_, session, job_id_, round_, kMaxOutstandingKeyRequests,
                                     &stats_.key_requests);
}

Status FedWalkWalkRole::SendHeldWalks(device::DeviceSession& session) {
  // Round robin from where the last pass stopped, so no walk waits behind
  // others indefinitely when output space is scarce.
  const size_t n = queue_.capacity();
  for (size_t visited = 0; visited < n && queue_.in_use() > 0 && session.CanSend(); ++visited) {
    if (send_cursor_ >= n) send_cursor_ = 0;
    WalkSlot* slot = &queue_.at(send_cursor_++);
    roles::KeyedPeer* peer = nullptr;
    if (CanLeave(*slot, &peer)) NODEFL_TRY(SendHeld(session, slot, peer));
  }
  return Status::Ok();
}

bool FedWalkWalkRole::CanLeave(const WalkSlot& slot, roles::KeyedPeer** peer) {
  *peer = nullptr;
  if (slot.state == SlotState::kResult) return true;
  if (slot.state != SlotState::kForward) return false;
  *peer = peers_.Find(slot.peer);
  return *peer != nullptr && (*peer)->state == roles::PeerKeyState::kReady;
}

Status FedWalkWalkRole::SendHeld(device::DeviceSession& session, WalkSlot* slot, roles::KeyedPeer* peer) {
  return slot->state == SlotState::kResult ? SendResult(session, slot) : SendForward(session, slot, peer);
}

Status FedWalkWalkRole::SendOneHeldWalk(device::DeviceSession& session, bool* sent) {
  *sent = false;
  const size_t n = queue_.capacity();
  for (size_t visited = 0; visited < n; ++visited) {
    if (send_cursor_ >= n) send_cursor_ = 0;
    WalkSlot* slot = &queue_.at(send_cursor_++);
    roles::KeyedPeer* peer = nullptr;
    if (!CanLeave(*slot, &peer)) continue;
    const size_t before = queue_.in_use();
    NODEFL_TRY(SendHeld(session, slot, peer));
    // A walk whose seal fails ends in its slot (kDropped) without a send.
    *sent = queue_.in_use() < before;
    return Status::Ok();
  }
  return Status::Ok();
}

WalkSlot* FedWalkWalkRole::AcquireMakingRoom(SlotState state, device::DeviceSession& session) {
  WalkSlot* slot = queue_.Acquire(state);
  if (slot != nullptr || !session.CanSend()) return slot;
  // Deliveries come in batches between polls (a whole read of the socket,
  // or what the relay held during a reconnect), and a hub's queue fills
  // with walks that could go on: one of them leaves now and the new walk
  // takes its slot instead of being dropped. Only with room to keep the
  // send: an unkept (unnumbered) send makes the server's reader wait for
  // room at the destination, and at a busy hub that wait ran out and the
  // server refused the sender's session (BlogCatalog, gamma 80: 573
  // devices lost at once). Without room the arrival is dropped and its
  // slot re-issued by the server.
  bool sent = false;
  if (!SendOneHeldWalk(session, &sent).ok() || !sent) return nullptr;
  return queue_.Acquire(state);
}

bool FedWalkWalkRole::NeighbourKeysSettled() const {
  for (const roles::KeyedPeer& p : storage_.neighbour_peers.first(inputs_.neighbours.size())) {
    if (p.state == roles::PeerKeyState::kWanted || p.state == roles::PeerKeyState::kRequested ||
        p.state == roles::PeerKeyState::kDirectory) {
      return false;
    }
  }
  return true;
}

Status FedWalkWalkRole::SendReport(device::DeviceSession& session, uint32_t round) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS;
  if (round == kWalkRoundKeys) {
    r.code = static_cast<uint32_t>(round1_outcome_.code());
    r.rejected = peers_.key_failures();
  } else {
    Status code = Status::Ok();
    if (refused_) {
      code = Status::ResourceExhausted();
    } else if (queue_.in_use() > 0) {
      code = Status::DeadlineExceeded();  // reported before every walk went out
    }
    r.code = static_cast<uint32_t>(code.code());
    r.expected = stats_.started + stats_.dropped_starts;
    r.sent = stats_.forwarded;
    r.received = stats_.finished;
    r.rejected = stats_.dropped + stats_.dropped_starts + stats_.lost + stats_.rejected;
    r.duplicates = stats_.duplicates;
    r.releases = stats_.encodings;
    r.epsilon = stats_.encodings * encoding_cost_.epsilon;
    r.delta = stats_.encodings * encoding_cost_.delta;
    r.edge_epsilon = edge_epsilon_;
    r.unbounded = encoding_cost_.unbounded && stats_.encodings > 0;
    r.unbounded_against_server = stats_.encodings > 0;
  }
  NODEFL_TRY(session.Send(m));
  last_report_round_ = round;
  return Status::Ok();
}

Status FedWalkWalkRole::OnPoll(uint64_t now_us, device::DeviceSession& session) {
  if (phase_ == Phase::kIdle) return Status::Ok();
  if (deadline_pending_) {
    deadline_pending_ = false;
    deadline_us_ = deadline_ms_ == 0 ? 0 : now_us + uint64_t{deadline_ms_} * 1000;
  }
  if (!deadline_passed_ && deadline_us_ != 0 && now_us > deadline_us_) {
    deadline_passed_ = true;
    // Round 2 is over for walks that wait for a key.
    if (round_ == kWalkRoundWalks) EndWaitingWalks(/*only_for_keys=*/true);
  }
  if (resend_report_ && session.CanSend()) {
    resend_report_ = false;
    NODEFL_TRY(SendReport(session, last_report_round_));
  }
  if (phase_ != Phase::kReport && phase_ != Phase::kDone) NODEFL_TRY(SendKeyRequests(session));
  NODEFL_TRY(SendHeldWalks(session));

  if (phase_ == Phase::kKeys && session.CanSend()) {
    const bool settled = NeighbourKeysSettled();
    if (refused_ || settled || deadline_passed_) {
      if (refused_) {
        round1_outcome_ = Status::ResourceExhausted();
      } else if (!settled) {
        round1_outcome_ = Status::DeadlineExceeded();
      } else {
        round1_outcome_ = peers_.key_failures() == 0 ? Status::Ok() : Status::Unauthenticated();
      }
      NODEFL_TRY(SendReport(session, kWalkRoundKeys));
      phase_ = Phase::kKeysReported;
    }
  }
  if (phase_ == Phase::kReport && (queue_.in_use() == 0 || deadline_passed_) && session.CanSend()) {
    NODEFL_TRY(SendReport(session, kWalkRoundReport));
    phase_ = Phase::kDone;
    // Nothing more is sealed in this job, and walks arriving now are lost
    // anyway: forget the job's keys (forward secrecy).
    peers_.EndJob();
    job_key_.End();
  }
  return Status::Ok();
}

}  // namespace nodefl::fedwalk
