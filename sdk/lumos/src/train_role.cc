// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/train_role.h"

#include <cmath>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/sorted_search.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/seal/seal.h"

namespace nodefl::lumos {
namespace {

constexpr uint32_t kMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;
constexpr size_t kAlignSlack = 64;  // per carved span

gnn::ModelShape ShapeOf(const TrainParameters& p) {
  gnn::ModelShape s;
  s.layer = static_cast<gnn::LayerKind>(p.layer);
  s.features = p.features;
  s.hidden = p.hidden;
  s.out = p.out;
  s.heads = p.heads;
  s.classes = p.classes;
  s.dropout = p.dropout;
  return s;
}

PrivacyMode ModeOf(const TrainParameters& p) { return p.paper ? PrivacyMode::kPaper : PrivacyMode::kStrict; }

}  // namespace

Result<uint32_t> RandomisedResponse(Drbg& noise, uint32_t label, uint32_t classes, double epsilon) {
  if (classes == 0 || label >= classes || !(std::isfinite(epsilon) && epsilon > 0)) return Status::InvalidArgument();
  if (classes == 1) return label;
  const double e = std::exp(epsilon);
  const bool kept = noise.Bernoulli(e / (e + static_cast<double>(classes - 1)));
  NODEFL_TRY(noise.status());
  if (kept) return label;
  const uint32_t other = static_cast<uint32_t>(noise.UniformBelow(classes - 1));
  NODEFL_TRY(noise.status());
  return other >= label ? other + 1 : other;
}

size_t TrainRoleMemory(const TrainParameters& p, uint32_t workload, uint32_t degree) {
  const gnn::ModelShape shape = ShapeOf(p);
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  if (!layout.ok() || shape.classes == 0) return 0;
  const TrainerSizing t = SizeTrainer(shape, p.ego_star ? gnn::TreeKind::kEgoStar : gnn::TreeKind::kLumosTree, workload);
  const size_t d = p.features;
  const size_t scratch = d > shape.out ? d : shape.out;
  return 4 * (t.row_begin + t.csr + d) + sizeof(float) * (t.scalars + 2 * layout->total + size_t{degree} * shape.out + d +
                                                      scratch) +
         size_t{degree} * OneBitPackedSize(d) + 10 * kAlignSlack;
}

LumosTrainRole::LumosTrainRole(uint32_t own_id, Span<TrainPeer> peers, Span<roles::KeyedPeer> keys, ByteSpan memory,
                               const tls::TlsCredentials& credentials, crypto::RandomFunction random,
                               void* random_context, Drbg& noise, PrivacyLedger& ledger)
    : own_id_(own_id),
      peers_(peers),
      key_records_(keys),
      memory_(memory),
      arena_(memory),
      credentials_(credentials),
      random_(random),
      random_context_(random_context),
      noise_(noise),
      ledger_(ledger),
      keys_(credentials, random, random_context) {}

Status LumosTrainRole::Init() {
  if (peers_.size() != key_records_.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id != key_records_[i].id) return Status::InvalidArgument();
  }
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain() || random_ == nullptr) {
    return Status::FailedPrecondition();
  }
  return keys_.Bind(own_id_, key_records_, Span<roles::KeyedPeer>());
}

void LumosTrainRole::SetData(Span<const float> features, int32_t label) {
  own_features_ = features;
  label_ = label;
}

TrainPeer* LumosTrainRole::FindPeer(uint32_t id) {
  return FindSorted(peers_, id, [](const TrainPeer& p) { return p.id; });
}

// ---- Setup (round 1) ------------------------------------------------------------------------

Status LumosTrainRole::StartJob(const nodefl_wire_Envelope& message) {
  Result<TrainParameters> p = DecodeTrainParameters(protocol::BytesOf(message.body.job_start.parameters));
  if (!p.ok()) return p.status();
  if (message.round == 1) {
    if (p->phase != TrainPhase::kSetup) return Status::InvalidArgument();
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      report_.OnRepeatedRound(1);  // a reconnect or a replay: keep going
      return Status::Ok();
    }
    job_id_ = message.job_id;
    return Setup(*p);
  }
  if (message.job_id != job_id_ || phase_ == Phase::kIdle) return Status::FailedPrecondition();
  if (p->phase == TrainPhase::kEpoch) {
    if (phase_ == Phase::kDone || !refusal_.ok()) return Status::Ok();  // took no part
    if (p->epoch == epoch_ && message.round == epoch_round_) {
      report_.OnRepeatedRound(message.round);
      return Status::Ok();
    }
    StartEpoch(*p, message.round);
    return Status::Ok();
  }
  if (p->phase == TrainPhase::kReport) {
    if (phase_ == Phase::kReporting || phase_ == Phase::kDone) {
      report_.OnRepeatedRound(message.round);
      return Status::Ok();
    }
    report_round_ = message.round;
    phase_ = Phase::kReporting;
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

Status LumosTrainRole::Setup(const TrainParameters& p) {
  params_ = p;
  shape_ = ShapeOf(p);
  stats_ = Stats{};
  report_.Reset();
  refusal_ = Status::Ok();
  next_counter_ = 1;
  epoch_ = epoch_round_ = 0;
  step_ = EpochStep::kDone;
  notices_ = features_needed_ = features_got_ = keys_settled_ = keepers_ = 0;
  split_known_ = false;
  summary_sent_ = false;
  train_label_ = -1;
  feature_cost_ = OneBitCost{};
  ledger_.BeginJob(job_id_);
  NODEFL_TRY(job_key_.Begin(job_id_, ConstByteSpan(p.salt, sizeof(p.salt)), random_, random_context_));
  workload_ = 0;
  for (TrainPeer& peer : peers_) {
    const uint32_t id = peer.id;
    const bool keep = peer.keep;
    peer = TrainPeer{};
    peer.id = id;
    peer.keep = keep;
    if (keep) peer.kept_index = workload_++;
  }
  phase_ = Phase::kKeys;
  // What this device cannot take part with: reported in round 1.
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape_);
  if (!bound_ || own_features_.size() != p.features) {
    refusal_ = Status::FailedPrecondition();
  } else if (!layout.ok() || layout->total != p.parameters || shape_.classes == 0) {
    refusal_ = Status::InvalidArgument();
  } else if (TrainRoleMemory(p, workload_, static_cast<uint32_t>(peers_.size())) > memory_.size()) {
    refusal_ = Status::ResourceExhausted();
  }
  if (refusal_.ok()) {
    // The worst case of what the feature release may cost (paper: one bin
    // per neighbour) must fit the budget before anything is sent.
    Result<OneBitParams> worst = MakeOneBitParams(ModeOf(p), p.epsilon,
                                                  peers_.size() == 0 ? 1 : static_cast<uint32_t>(peers_.size()),
                                                  p.features, 0.0f, 1.0f);
    if (!worst.ok()) {
      refusal_ = worst.status();
    } else {
      Result<OneBitCost> cost = OneBitEpsilon(*worst);
      ReleaseCost c;
      c.epsilon = cost.ok() ? cost->all_receivers : 0.0;
      refusal_ = cost.ok() ? ledger_.CanRecord(kLedgerPhaseLumosFeatures, Mechanism::kOneBit, ModeOf(p), c)
                           : cost.status();
    }
  }
  if (refusal_.ok()) refusal_ = ReleaseLabel();
  if (refusal_.ok()) {
    arena_.Reset();
    const gnn::TreeKind kind = p.ego_star ? gnn::TreeKind::kEgoStar : gnn::TreeKind::kLumosTree;
    const TrainerSizing t = SizeTrainer(shape_, kind, workload_);
    Result<Span<uint32_t>> rows = arena_.Allocate<uint32_t>(t.row_begin);
    Result<Span<uint32_t>> csr = arena_.Allocate<uint32_t>(t.csr);
    Result<Span<float>> scalars = arena_.Allocate<float>(t.scalars);
    Result<Span<float>> params = arena_.Allocate<float>(layout->total);
    Result<Span<float>> grads = arena_.Allocate<float>(layout->total);
    Result<Span<float>> embeddings = arena_.Allocate<float>(peers_.size() * shape_.out);
    Result<Span<float>> own = arena_.Allocate<float>(p.features);
    Result<Span<uint8_t>> packed = arena_.Allocate<uint8_t>(peers_.size() * OneBitPackedSize(p.features));
    Result<Span<float>> scratch = arena_.Allocate<float>(p.features > shape_.out ? p.features : shape_.out);
    Result<Span<uint32_t>> dims = arena_.Allocate<uint32_t>(p.features);
    if (!rows.ok() || !csr.ok() || !scalars.ok() || !params.ok() || !grads.ok() || !embeddings.ok() || !own.ok() ||
        !packed.ok() || !scratch.ok() || !dims.ok()) {
      refusal_ = Status::ResourceExhausted();
    } else {
      params_buffer_ = *params;
      grads_ = *grads;
      keeper_embeddings_ = *embeddings;
      own_encoding_ = *own;
      packed_ = *packed;
      scratch_ = *scratch;
      receiver_of_dim_ = *dims;
      refusal_ = trainer_.Bind(shape_, kind, workload_, *rows, *csr, *scalars);
    }
  }
  // Keys: every neighbour, also when this device refuses: its notices tell
  // the neighbours not to wait for it.
  keys_.StartJob(job_key_.key(), false, [](size_t) { return true; });
  return Status::Ok();
}

// k-ary randomised response, once per job (strict); the raw label in paper
// mode, recorded as the unbounded release it is.
Status LumosTrainRole::ReleaseLabel() {
  if (label_ < 0 || static_cast<uint32_t>(label_) >= params_.classes) {
    train_label_ = -1;  // no label: nothing to release
    return Status::Ok();
  }
  if (params_.paper) {
    ReleaseCost c;
    c.unbounded = true;
    c.unbounded_against_server = true;
    NODEFL_TRY(ledger_.Record(kLedgerPhaseLumosLabel, Mechanism::kExact, PrivacyMode::kPaper, c));
    train_label_ = label_;
    return Status::Ok();
  }
  ReleaseCost c;
  c.epsilon = params_.label_epsilon;
  NODEFL_TRY(ledger_.Record(kLedgerPhaseLumosLabel, Mechanism::kExponential, PrivacyMode::kStrict, c));
  Result<uint32_t> noised =
      RandomisedResponse(noise_, static_cast<uint32_t>(label_), params_.classes, params_.label_epsilon);
  if (!noised.ok()) return noised.status();
  train_label_ = static_cast<int32_t>(*noised);
  return Status::Ok();
}

void LumosTrainRole::HandleCertificate(const nodefl_wire_PeerCertificate& certificate) {
  roles::KeyedPeer* k = keys_.OnCertificate(certificate);
  if (k == nullptr) return;
  ++keys_settled_;
  if (k->state != roles::PeerKeyState::kReady) ++stats_.key_failures;
  TrainPeer* peer = FindPeer(k->id);
  if (peer == nullptr || peer->held_size == 0) return;
  const uint8_t size = peer->held_size;
  peer->held_size = 0;
  if (k->state == roles::PeerKeyState::kReady) {
    OpenHeld(*peer, *k, ConstByteSpan(peer->held, size));
  } else {
    ++stats_.rejected;
  }
}

// Every neighbour's notice in: who keeps this device, and the encoding of
// its features for them (Lumos Eq. 26, one bin per keeper).
Status LumosTrainRole::EncodeFeatures() {
  keepers_ = 0;
  for (TrainPeer& p : peers_) {
    if (p.keeps_me) p.keeper_index = keepers_++;
  }
  const uint32_t bins = keepers_ == 0 ? 1 : keepers_;
  Result<OneBitParams> op = MakeOneBitParams(ModeOf(params_), params_.epsilon, bins, params_.features, 0.0f, 1.0f);
  if (!op.ok()) return op.status();
  feature_params_ = *op;
  Result<OneBitCost> cost = OneBitEpsilon(feature_params_);
  if (!cost.ok()) return cost.status();
  feature_cost_ = *cost;
  // Recorded before any bit leaves the device, both or neither.
  ReleaseCost c;
  c.epsilon = feature_cost_.all_receivers;
  // Paper mode: own leaves carry the raw features, and embeddings and
  // gradients built on them leave the device unbounded.
  ReleaseCost raw;
  raw.unbounded = true;
  raw.unbounded_against_server = true;
  if (params_.paper) {
    NODEFL_TRY(ledger_.CanRecord(kLedgerPhaseLumosTraining, Mechanism::kExact, PrivacyMode::kPaper, raw));
  }
  NODEFL_TRY(ledger_.Record(kLedgerPhaseLumosFeatures, Mechanism::kOneBit, ModeOf(params_), c));
  if (params_.paper) {
    NODEFL_TRY(ledger_.Record(kLedgerPhaseLumosTraining, Mechanism::kExact, PrivacyMode::kPaper, raw));
  }
  const size_t d = params_.features;
  NODEFL_TRY(AssignReleasedDimensions(noise_, feature_params_, receiver_of_dim_));
  // Bin by bin (each released dim is randomised exactly once, in its bin's
  // call): keeper b gets bin b, and the union of the bins, recovered, is
  // what the own leaves carry in strict mode (post-processing of what the
  // keepers hold together, so it costs nothing more).
  const size_t packed = OneBitPackedSize(d);
  Span<float> encoded(scratch_.data(), d);
  for (size_t i = 0; i < d; ++i) own_encoding_[i] = 0.5f;
  for (uint32_t b = 0; b < bins; ++b) {
    NODEFL_TRY(EncodeOneBitPartial(noise_, feature_params_, own_features_, receiver_of_dim_, b, encoded));
    if (b < keepers_) NODEFL_TRY(PackOneBit(encoded, Span<uint8_t>(packed_.data() + b * packed, packed)));
    for (size_t i = 0; i < d; ++i) {
      if (receiver_of_dim_[i] == b) own_encoding_[i] = encoded[i];
    }
  }
  NODEFL_TRY(RecoverOneBit(feature_params_, own_encoding_, own_encoding_));
  FillOwnLeaves();
  for (TrainPeer& p : peers_) p.features_due = p.keeps_me;
  return Status::Ok();
}

void LumosTrainRole::FillOwnLeaves() {
  gnn::MatrixMap<float> h0 = trainer_.features();
  const gnn::TreeNodes& at = trainer_.nodes();
  const Span<const float> own = params_.paper ? own_features_ : Span<const float>(own_encoding_);
  for (uint32_t k = 0; k < at.own_leaves(); ++k) {
    for (uint32_t f = 0; f < params_.features; ++f) h0(at.OwnLeaf(k), f) = own[f];
  }
}

// ---- Epochs ---------------------------------------------------------------------------------

void LumosTrainRole::StartEpoch(const TrainParameters& p, uint32_t round) {
  epoch_ = p.epoch;
  epoch_round_ = round;
  epoch_train_ = p.train;
  step_ = EpochStep::kParams;
  params_next_ = 0;
  pooled_ = false;
  upload_cursor_ = 0;
  metrics_sent_ = false;
  metrics_ = TrainMetrics{};
  for (float& g : grads_) g = 0.0f;
  trainer_.ClearGradients();
  expected_embeddings_ = expected_gradients_ = 0;
  embeddings_got_ = gradients_got_ = 0;
  for (TrainPeer& peer : peers_) {
    const bool keyed = !peer.absent;
    peer.embedding_due = peer.gradient_due = false;
    peer.gradient_received = false;
    if (keyed && peer.keeps_me) {
      ++expected_embeddings_;
      // An embedding of this epoch may have come before its JobStart.
      if (peer.embedding_epoch == epoch_) ++embeddings_got_;
    }
    if (keyed && peer.keep) ++expected_gradients_;
  }
  phase_ = Phase::kEpoch;
}

void LumosTrainRole::TryPool() {
  if (pooled_ || step_ != EpochStep::kEmbeddings || embeddings_got_ < expected_embeddings_) return;
  const Span<const float> params(params_buffer_.data(), params_buffer_.size());
  trainer_.BeginPool();
  for (const TrainPeer& peer : peers_) {
    if (!peer.keeps_me || peer.embedding_epoch != epoch_) continue;
    (void)trainer_.AddToPool(
        Span<const float>(keeper_embeddings_.data() + size_t{peer.keeper_index} * shape_.out, shape_.out));
  }
  metrics_.epoch = epoch_;
  metrics_.split = split_;
  metrics_.pool = trainer_.pool_count();
  metrics_.labelled = train_label_ >= 0 && trainer_.pool_count() > 0;
  Span<float> gradient(scratch_.data(), shape_.out);
  for (float& g : gradient) g = 0.0f;
  if (metrics_.labelled) {
    const uint32_t label = static_cast<uint32_t>(train_label_);
    bool correct = false;
    Result<float> eval = trainer_.Evaluate(params, label, &correct);
    metrics_.correct = eval.ok() && correct;
    metrics_.loss = eval.ok() ? *eval : 0.0;
    if (epoch_train_ && split_known_ && split_ == 0) {
      Result<float> loss = trainer_.SupervisedLoss(params, label, grads_);
      if (loss.ok() && trainer_.PoolGradient(gradient).ok()) {
        metrics_.trained = true;
        (void)trainer_.SetOwnLeafGradient(gradient);
      }
    }
  }
  // Every keeper gets the pool's gradient for its leaf (zero without a
  // loss, so that it can go on either way).
  for (TrainPeer& peer : peers_) peer.gradient_due = peer.keeps_me && peer.embedding_epoch == epoch_;
  pooled_ = true;
  step_ = EpochStep::kGradients;
}

// ---- Messages -------------------------------------------------------------------------------

void LumosTrainRole::HandleData(const nodefl_wire_JobData& data) {
  const ConstByteSpan bytes = protocol::BytesOf(data.data);
  if (data.kind == kTrainAssignment) {
    if (bytes.size() == 1 && bytes[0] <= 2) {
      split_ = bytes[0];
      split_known_ = true;
    }
    return;
  }
  if (data.kind == kTrainParams) {
    if (phase_ != Phase::kEpoch || step_ != EpochStep::kParams || bytes.size() < 4 || (bytes.size() - 4) % 4 != 0) {
      return;
    }
    const uint32_t first = LoadU32Le(bytes.data());
    const size_t count = (bytes.size() - 4) / 4;
    // Records come in order on one connection: take the next one only.
    if (first != params_next_ || first + count > params_buffer_.size()) return;
    for (size_t i = 0; i < count; ++i) params_buffer_[first + i] = LoadF32Le(bytes.data() + 4 + 4 * i);
    params_next_ += static_cast<uint32_t>(count);
    stats_.bytes_down += bytes.size();
  }
}

void LumosTrainRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  TrainPeer* peer = FindPeer(d.src);
  roles::KeyedPeer* k = keys_.Find(d.src);
  if (peer == nullptr || k == nullptr || message.job_id != job_id_) {
    ++stats_.rejected;
    return;
  }
  const ConstByteSpan sealed = protocol::BytesOf(d.sealed);
  if (k->state != roles::PeerKeyState::kReady) {
    // Only a notice can come this early (everything else follows one from
    // us, sent with our keys settled); keep it sealed until ours are.
    const bool waiting = k->state == roles::PeerKeyState::kWanted || k->state == roles::PeerKeyState::kRequested;
    if (waiting && peer->held_size == 0 && sealed.size() <= sizeof(peer->held)) {
      for (size_t i = 0; i < sealed.size(); ++i) peer->held[i] = sealed[i];
      peer->held_size = static_cast<uint8_t>(sealed.size());
      return;
    }
    ++stats_.rejected;
    return;
  }
  OpenHeld(*peer, *k, sealed);
}

void LumosTrainRole::OpenHeld(TrainPeer& peer, roles::KeyedPeer& k, ConstByteSpan sealed) {
  const uint32_t src = peer.id;
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(k.job_keys, src, own_id_, job_id_, sealed,
                                     ByteSpan(plain_, sizeof(scratch_words_)), &counter);
  if (!opened.ok() || *opened < kTrainMessageHeaderBytes) {
    ++stats_.rejected;
    return;
  }
  if (!k.window.Accept(counter).ok()) {
    ++stats_.rejected;
    return;
  }
  ++stats_.messages_received;
  OnPeerMessage(peer, ConstByteSpan(plain_, *opened));
}

void LumosTrainRole::OnPeerMessage(TrainPeer& peer, ConstByteSpan m) {
  const uint8_t type = m[0];
  const uint32_t epoch = LoadU32Le(m.data() + 1);
  const ConstByteSpan body = m.subspan(kTrainMessageHeaderBytes);
  const size_t embedding_bytes = size_t{shape_.out} * 4;
  switch (static_cast<TrainMessageType>(type)) {
    case TrainMessageType::kKeepNotice:
      // bit 0: it keeps this device; bit 1: it takes part in the job.
      if (body.size() != 1 || body[0] > 3 || peer.notice_received) break;
      peer.notice_received = true;
      peer.absent = (body[0] & 2u) == 0;
      peer.keeps_me = !peer.absent && (body[0] & 1u) != 0;
      ++notices_;
      return;
    case TrainMessageType::kFeatures: {
      // bins (4) | packed bits of our bin.
      if (!peer.keep || peer.features_received || body.size() != 4 + OneBitPackedSize(params_.features)) break;
      const uint32_t bins = LoadU32Le(body.data());
      Result<OneBitParams> op =
          MakeOneBitParams(ModeOf(params_), params_.epsilon, bins, params_.features, 0.0f, 1.0f);
      Span<float> values(scratch_.data(), params_.features);
      if (!op.ok() || !UnpackOneBit(body.subspan(4), values).ok() || !RecoverOneBit(*op, values, values).ok()) break;
      gnn::MatrixMap<float> h0 = trainer_.features();
      const uint32_t node = trainer_.nodes().NeighbourLeaf(peer.kept_index);
      for (uint32_t f = 0; f < params_.features; ++f) h0(node, f) = values[f];
      peer.features_received = true;
      ++features_got_;
      return;
    }
    case TrainMessageType::kLeafEmbedding:
      if (!peer.keeps_me || body.size() != embedding_bytes || epoch == 0) break;
      if (epoch < epoch_ || (epoch == epoch_ && peer.embedding_epoch == epoch)) {
        ++stats_.stale;
        return;
      }
      for (uint32_t i = 0; i < shape_.out; ++i) {
        keeper_embeddings_[size_t{peer.keeper_index} * shape_.out + i] = LoadF32Le(body.data() + 4 * i);
      }
      peer.embedding_epoch = epoch;
      if (epoch == epoch_ && phase_ == Phase::kEpoch) ++embeddings_got_;
      return;
    case TrainMessageType::kLeafGradient: {
      if (!peer.keep || body.size() != embedding_bytes) break;
      if (epoch != epoch_ || phase_ != Phase::kEpoch || peer.gradient_received || step_ < EpochStep::kEmbeddings) {
        ++stats_.stale;
        return;
      }
      float values[256];
      if (shape_.out > 256) break;
      for (uint32_t i = 0; i < shape_.out; ++i) values[i] = LoadF32Le(body.data() + 4 * i);
      (void)trainer_.SetNeighbourLeafGradient(peer.kept_index, Span<const float>(values, shape_.out));
      peer.gradient_received = true;
      ++gradients_got_;
      return;
    }
  }
  ++stats_.rejected;
}

Status LumosTrainRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
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

// ---- Sending --------------------------------------------------------------------------------

Status LumosTrainRole::SendMessage(TrainPeer& peer, TrainMessageType type, ConstByteSpan body,
                                   device::DeviceSession& session) {
  roles::KeyedPeer* k = keys_.Find(peer.id);
  if (k == nullptr || k->state != roles::PeerKeyState::kReady) return Status::FailedPrecondition();
  if (kTrainMessageHeaderBytes + body.size() > sizeof(scratch_words_)) return Status::ResourceExhausted();
  plain_[0] = static_cast<uint8_t>(type);
  StoreU32Le(type == TrainMessageType::kKeepNotice || type == TrainMessageType::kFeatures ? 0 : epoch_, plain_ + 1);
  for (size_t i = 0; i < body.size(); ++i) plain_[kTrainMessageHeaderBytes + i] = body[i];
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, epoch_round_ ? epoch_round_ : 1);
  m.body.relay_send.dst = peer.id;
  const seal::SealHeader header{own_id_, peer.id, job_id_, next_counter_};
  Result<size_t> sealed = seal::Seal(k->job_keys, header, ConstByteSpan(plain_, kTrainMessageHeaderBytes + body.size()),
                                     ByteSpan(m.body.relay_send.sealed.bytes));
  if (!sealed.ok()) return sealed.status();
  m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
  NODEFL_TRY(session.Send(m));
  ++next_counter_;
  ++stats_.messages_sent;
  return Status::Ok();
}

// Whatever is due to neighbours, as far as the session has room.
Status LumosTrainRole::Flush(device::DeviceSession& session) {
  uint8_t body[4 * 256];
  for (TrainPeer& peer : peers_) {
    if (!session.CanSend()) return Status::Ok();
    const roles::KeyedPeer* k = keys_.Find(peer.id);
    if (k == nullptr || k->state != roles::PeerKeyState::kReady) continue;
    if (!peer.notice_sent && phase_ >= Phase::kNotices) {
      body[0] = static_cast<uint8_t>((peer.keep ? 1u : 0u) | (refusal_.ok() ? 2u : 0u));
      NODEFL_TRY(SendMessage(peer, TrainMessageType::kKeepNotice, ConstByteSpan(body, 1), session));
      peer.notice_sent = true;
      if (!session.CanSend()) return Status::Ok();
    }
    if (peer.features_due) {
      const size_t packed = OneBitPackedSize(params_.features);
      if (4 + packed > sizeof(scratch_words_) - kTrainMessageHeaderBytes) return Status::ResourceExhausted();
      // bins (4) | this keeper's bin, built where SendMessage puts the body
      // (its copy onto itself is then a no-op).
      uint8_t* q = plain_ + kTrainMessageHeaderBytes;
      StoreU32Le(keepers_ == 0 ? 1 : keepers_, q);
      const uint8_t* src = packed_.data() + size_t{peer.keeper_index} * packed;
      for (size_t i = 0; i < packed; ++i) q[4 + i] = src[i];
      NODEFL_TRY(SendMessage(peer, TrainMessageType::kFeatures, ConstByteSpan(q, 4 + packed), session));
      peer.features_due = false;
      if (!session.CanSend()) return Status::Ok();
    }
    if (phase_ == Phase::kEpoch && peer.embedding_due && shape_.out <= 256) {
      const gnn::ConstRowMap<float> leaf = trainer_.NeighbourLeaf(peer.kept_index);
      for (uint32_t i = 0; i < shape_.out; ++i) StoreF32Le(leaf(i), body + 4 * i);
      NODEFL_TRY(SendMessage(peer, TrainMessageType::kLeafEmbedding, ConstByteSpan(body, 4 * shape_.out), session));
      peer.embedding_due = false;
      if (!session.CanSend()) return Status::Ok();
    }
    if (phase_ == Phase::kEpoch && peer.gradient_due && shape_.out <= 256) {
      const bool trained = metrics_.trained;
      for (uint32_t i = 0; i < shape_.out; ++i) StoreF32Le(trained ? scratch_[i] : 0.0f, body + 4 * i);
      NODEFL_TRY(SendMessage(peer, TrainMessageType::kLeafGradient, ConstByteSpan(body, 4 * shape_.out), session));
      peer.gradient_due = false;
    }
  }
  return Status::Ok();
}

Status LumosTrainRole::Upload(device::DeviceSession& session) {
  // Gradient records (train epochs), then the metrics: the server adds a
  // device's contribution when its metrics arrive.
  while (epoch_train_ && upload_cursor_ < grads_.size() && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, epoch_round_);
    m.body.job_data.kind = kTrainGradient;
    const size_t count =
        grads_.size() - upload_cursor_ < kTrainFloatsPerRecord ? grads_.size() - upload_cursor_ : kTrainFloatsPerRecord;
    uint8_t* q = m.body.job_data.data.bytes;
    StoreU32Le(static_cast<uint32_t>(upload_cursor_), q);
    for (size_t i = 0; i < count; ++i) StoreF32Le(grads_[upload_cursor_ + i], q + 4 + 4 * i);
    m.body.job_data.data.size = static_cast<pb_size_t>(4 + 4 * count);
    NODEFL_TRY(session.Send(m));
    stats_.bytes_up += 4 + 4 * count;
    upload_cursor_ += count;
  }
  if (epoch_train_ && upload_cursor_ < grads_.size()) return Status::Ok();
  if (!metrics_sent_ && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, epoch_round_);
    m.body.job_data.kind = kTrainMetrics;
    Result<size_t> n = EncodeTrainMetrics(metrics_, ByteSpan(m.body.job_data.data.bytes));
    if (!n.ok()) return n.status();
    m.body.job_data.data.size = static_cast<pb_size_t>(*n);
    NODEFL_TRY(session.Send(m));
    stats_.bytes_up += *n;
    metrics_sent_ = true;
  }
  if (metrics_sent_ && session.CanSend()) {
    NODEFL_TRY(Report(session, epoch_round_, Status::Ok()));
    if (epoch_train_) ++stats_.epochs;
    step_ = EpochStep::kDone;
  }
  return Status::Ok();
}

Status LumosTrainRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN;
  r.code = static_cast<uint32_t>(outcome.code());
  r.expected = expected_embeddings_;
  r.sent = stats_.messages_sent;
  r.received = stats_.messages_received;
  r.rejected = stats_.rejected;
  r.duplicates = stats_.stale;
  return session.Send(m);
}

void LumosTrainRole::OnSessionRestart(bool) {
  keys_.OnRestart();
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

Status LumosTrainRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  // Keys: our job key first, then the neighbours'.
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (!job_key_.due()) {
    while (keys_.has_wanted() && session.CanSend() && keys_.outstanding() < kMaxOutstandingKeyRequests) {
      nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_peer_key_request_tag, job_id_, 1);
      if (keys_.FillRequest(&m.body.peer_key_request, kMaxOutstandingKeyRequests) == 0) break;
      NODEFL_TRY(session.Send(m));
    }
  }
  if (phase_ == Phase::kKeys && keys_settled_ >= peers_.size()) phase_ = Phase::kNotices;
  if (phase_ == Phase::kNotices) {
    // Every keyed neighbour's notice in (one that failed its keys cannot
    // send one: it counts as not keeping this device).
    uint32_t keyed = 0;
    for (const TrainPeer& p : peers_) {
      const roles::KeyedPeer* k = keys_.Find(p.id);
      keyed += k != nullptr && k->state == roles::PeerKeyState::kReady ? 1u : 0u;
    }
    if (notices_ >= keyed) {
      for (TrainPeer& p : peers_) {
        const roles::KeyedPeer* k = keys_.Find(p.id);
        if (k == nullptr || k->state != roles::PeerKeyState::kReady) p.absent = true;
      }
      if (refusal_.ok()) {
        const Status encoded = EncodeFeatures();
        if (!encoded.ok()) refusal_ = encoded;
      }
      features_needed_ = 0;
      for (const TrainPeer& p : peers_) features_needed_ += p.keep && !p.absent ? 1u : 0u;
      phase_ = Phase::kFeatures;
    }
  }
  NODEFL_TRY(Flush(session));
  if (phase_ == Phase::kFeatures && session.CanSend()) {
    bool sent = true;
    for (const TrainPeer& p : peers_) sent = sent && !p.features_due && (p.notice_sent || p.absent);
    if (!refusal_.ok() || (sent && features_got_ >= features_needed_)) {
      NODEFL_TRY(Report(session, 1, refusal_));
      phase_ = refusal_.ok() ? Phase::kSetupReported : Phase::kDone;
      if (!refusal_.ok()) {
        keys_.EndJob();
        job_key_.End();
      }
    }
    return Status::Ok();
  }
  if (phase_ == Phase::kEpoch) {
    const Span<const float> params(params_buffer_.data(), params_buffer_.size());
    if (step_ == EpochStep::kParams && params_next_ >= params_buffer_.size()) {
      NODEFL_TRY(trainer_.Forward(params, epoch_train_, &crypto::DrbgRandom, &noise_));
      for (TrainPeer& peer : peers_) peer.embedding_due = peer.keep && !peer.absent;
      step_ = EpochStep::kEmbeddings;
      NODEFL_TRY(Flush(session));
    }
    TryPool();
    if (step_ == EpochStep::kGradients) {
      NODEFL_TRY(Flush(session));
      bool flushed = true;
      for (const TrainPeer& p : peers_) flushed = flushed && !p.gradient_due && !p.embedding_due;
      if (flushed && gradients_got_ >= expected_gradients_) {
        if (epoch_train_) NODEFL_TRY(trainer_.Backward(params, grads_));
        step_ = EpochStep::kUpload;
      }
    }
    if (step_ == EpochStep::kUpload) NODEFL_TRY(Upload(session));
    return Status::Ok();
  }
  if (phase_ == Phase::kReporting) {
    if (!summary_sent_ && session.CanSend()) {
      TrainSummary s;
      s.workload = workload_;
      s.keepers = keepers_;
      s.epochs = stats_.epochs;
      s.messages_sent = stats_.messages_sent;
      s.messages_received = stats_.messages_received;
      s.rejected = stats_.rejected;
      s.stale = stats_.stale;
      s.key_failures = stats_.key_failures;
      s.epsilon_all_receivers = feature_cost_.all_receivers;
      s.epsilon_per_receiver = feature_cost_.per_receiver;
      nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, report_round_);
      m.body.job_data.kind = kTrainSummary;
      Result<size_t> n = EncodeTrainSummary(s, ByteSpan(m.body.job_data.data.bytes));
      if (!n.ok()) return n.status();
      m.body.job_data.data.size = static_cast<pb_size_t>(*n);
      NODEFL_TRY(session.Send(m));
      summary_sent_ = true;
    }
    if (summary_sent_ && session.CanSend()) {
      NODEFL_TRY(Report(session, report_round_, Status::Ok()));
      phase_ = Phase::kDone;
      keys_.EndJob();
      job_key_.End();
    }
  }
  return Status::Ok();
}

}  // namespace nodefl::lumos
