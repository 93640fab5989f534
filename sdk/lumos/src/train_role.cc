// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/train_role.h"

#include <cmath>

#include <new>

#include "nodefl/core/little_endian.h"
#include "nodefl/gnn/losses.h"
#include "nodefl/core/sorted_search.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/seal/seal.h"
#include "nodefl/secagg/fixed_point.h"

namespace nodefl::lumos {
namespace {

constexpr uint32_t kMaxOutstandingKeyRequests = NODEFL_MAX_OUTSTANDING_KEY_REQUESTS;
constexpr size_t kAlignSlack = 64;  // per carved span

gnn::ModelShape ShapeOf(const TrainParameters& p) {
  gnn::ModelShape s;
  s.layer = static_cast<gnn::LayerKind>(p.layer);
  s.features = ModelFeatures(p);
  s.hidden = p.hidden;
  s.out = p.out;
  s.heads = p.heads;
  s.classes = p.classes;
  s.dropout = p.dropout;
  return s;
}

PrivacyMode ModeOf(const TrainParameters& p) { return p.paper ? PrivacyMode::kPaper : PrivacyMode::kStrict; }

// Secure sum's fixed-point codes (train_format.h): scales are powers of two.
secagg::FixedPoint CodeOf(float clip, int8_t scale_log2) {
  secagg::FixedPoint code;
  code.clip = clip;
  code.scale = static_cast<float>(std::ldexp(1.0, scale_log2));
  return code;
}

uint32_t CountWord(uint64_t count) {
  return static_cast<uint32_t>(count < kTrainSecureCountClip ? count : kTrainSecureCountClip);
}

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

size_t TrainRoleMemory(const TrainParameters& p, uint32_t workload, uint32_t degree, uint32_t partners) {
  const gnn::ModelShape shape = ShapeOf(p);
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape);
  const bool link = p.task == TrainTask::kLink;
  if (!layout.ok() || (shape.classes == 0 && !link)) return 0;
  // Link task: three (degree + partners) x out float blocks, the received
  // gradient, and two bytes of score per pair.
  const size_t rows = size_t{degree} + partners;
  const size_t link_bytes = link ? sizeof(float) * (3 * rows * shape.out + shape.out) + 2 * rows + 5 * kAlignSlack : 0;
  const TrainerSizing t = SizeTrainer(shape, p.ego_star ? gnn::TreeKind::kEgoStar : gnn::TreeKind::kLumosTree, workload);
  const size_t d = ModelFeatures(p);
  const size_t scratch = d > shape.out ? d : shape.out;
  const size_t projected = p.projection != 0 ? sizeof(float) * p.projection + kAlignSlack : 0;
  const size_t secure = p.secure_sum ? 4 * size_t{TrainSecureLength(static_cast<uint32_t>(layout->total))} + kAlignSlack
                                     : 0;
  return secure + 4 * (t.row_begin + t.csr + d) + sizeof(float) * (t.scalars + 2 * layout->total + size_t{degree} * shape.out + d +
                                                      scratch) +
         size_t{degree} * OneBitPackedSize(d) + 10 * kAlignSlack + link_bytes + projected;
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

LumosTrainRole::~LumosTrainRole() { DestroyAggregationLink(); }

Status LumosTrainRole::Init() {
  if (peers_.size() != key_records_.size()) return Status::InvalidArgument();
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id != key_records_[i].id) return Status::InvalidArgument();
  }
  if (!credentials_.has_own_identity() || !credentials_.has_ca_chain() || random_ == nullptr) {
    return Status::FailedPrecondition();
  }
  if (partners_.size() != partner_keys_.size()) return Status::InvalidArgument();
  return keys_.Bind(own_id_, key_records_, partner_keys_);
}

void LumosTrainRole::SetData(Span<const float> features, int32_t label) {
  own_features_ = features;
  label_ = label;
}

TrainPeer* LumosTrainRole::FindPeer(uint32_t id) {
  TrainPeer* p = FindSorted(peers_, id, [](const TrainPeer& q) { return q.id; });
  if (p != nullptr) return p;
  return FindSorted(Span<TrainPeer>(partners_.data(), partners_used_), id, [](const TrainPeer& q) { return q.id; });
}

// The server's draw (train_format.h, kTrainPartners): a drawn neighbour is
// skipped (its other end skips us alike), as is anything past capacity.
void LumosTrainRole::AddPartners(ConstByteSpan entries) {
  if (!link() || phase_ != Phase::kKeys || split_known_ || entries.size() % 5 != 0) {
    ++stats_.rejected;
    return;
  }
  for (size_t at = 0; at < entries.size(); at += 5) {
    const uint32_t id = LoadU32Le(entries.data() + at);
    const uint8_t use = entries[at + 4];
    if (id == own_id_ || use > 1 || FindPeer(id) != nullptr) continue;
    if (partners_used_ >= partners_.size()) {
      ++stats_.rejected;
      continue;
    }
    roles::KeyedPeer* k = keys_.FindOrAdd(id);
    if (k == nullptr) {
      ++stats_.rejected;
      continue;
    }
    keys_.Want(k);
    // Sorted insertion (a handful of partners).
    uint32_t i = partners_used_;
    while (i > 0 && partners_[i - 1].id > id) {
      partners_[i] = partners_[i - 1];
      --i;
    }
    TrainPeer fresh;
    fresh.id = id;
    fresh.partner = true;
    fresh.link_use = use;
    fresh.slot = static_cast<uint32_t>(peers_.size()) + partners_used_;
    partners_[i] = fresh;
    ++partners_used_;
  }
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
  partners_used_ = 0;
  score_count_ = 0;
  split_known_ = false;
  summary_sent_ = false;
  train_label_ = -1;
  feature_cost_ = OneBitCost{};
  ledger_.BeginJob(job_id_);
  NODEFL_TRY(job_key_.Begin(job_id_, ConstByteSpan(p.salt, sizeof(p.salt)), random_, random_context_));
  workload_ = 0;
  for (size_t i = 0; i < peers_.size(); ++i) {
    TrainPeer& peer = peers_[i];
    const uint32_t id = peer.id;
    const bool keep = peer.keep;
    peer = TrainPeer{};
    peer.id = id;
    peer.keep = keep;
    peer.slot = static_cast<uint32_t>(i);
    // Link task: held-out edges carry no messages (they are what is
    // predicted), so only kept training edges get a leaf pair.
    peer.link_use = EdgeSplitOf(p.edge_seed, own_id_, id);
    peer.in_tree = keep && (p.task != TrainTask::kLink || peer.link_use == 0);
    if (peer.in_tree) peer.kept_index = workload_++;
  }
  phase_ = Phase::kKeys;
  // What this device cannot take part with: reported in round 1.
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(shape_);
  const uint32_t partner_capacity = link() ? uint32_t{p.negatives} + p.eval_negatives : 0;
  if (!bound_ || own_features_.size() != p.features) {
    refusal_ = Status::FailedPrecondition();
  } else if (!layout.ok() || layout->total != p.parameters || (shape_.classes == 0) != link()) {
    refusal_ = Status::InvalidArgument();
  } else if (partner_capacity > partners_.size() ||
             TrainRoleMemory(p, workload_, static_cast<uint32_t>(peers_.size()), partner_capacity) >
                 memory_.size() ||
             (p.secure_sum && !SecureSumMemoryFits(p))) {
    refusal_ = Status::ResourceExhausted();
  }
  if (refusal_.ok()) {
    // The worst case of what the feature release may cost (paper: one bin
    // per neighbour) must fit the budget before anything is sent.
    Result<OneBitParams> worst = MakeOneBitParams(ModeOf(p), p.epsilon,
                                                  peers_.size() == 0 ? 1 : static_cast<uint32_t>(peers_.size()),
                                                  ModelFeatures(p), ModelFeatureRange(p).lower,
                                                  ModelFeatureRange(p).upper);
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
    const uint32_t d = ModelFeatures(p);
    Result<Span<float>> own = arena_.Allocate<float>(d);
    Result<Span<uint8_t>> packed = arena_.Allocate<uint8_t>(peers_.size() * OneBitPackedSize(d));
    Result<Span<float>> scratch = arena_.Allocate<float>(d > shape_.out ? d : shape_.out);
    Result<Span<uint32_t>> dims = arena_.Allocate<uint32_t>(d);
    Result<Span<float>> projected = arena_.Allocate<float>(p.projection);
    const size_t link_rows = link() ? (peers_.size() + partner_capacity) * shape_.out : 0;
    Result<Span<float>> pooled = arena_.Allocate<float>(link_rows);
    Result<Span<float>> loss_rows = arena_.Allocate<float>(link_rows);
    Result<Span<float>> loss_grads = arena_.Allocate<float>(link_rows);
    Result<Span<float>> received = arena_.Allocate<float>(link() ? shape_.out : 0);
    Result<Span<uint8_t>> scores = arena_.Allocate<uint8_t>(link() ? 2 * (peers_.size() + partner_capacity) : 0);
    Result<Span<uint32_t>> secure_input = arena_.Allocate<uint32_t>(p.secure_sum ? TrainSecureLength(p.parameters) : 0);
    if (!rows.ok() || !csr.ok() || !scalars.ok() || !params.ok() || !grads.ok() || !embeddings.ok() || !own.ok() ||
        !packed.ok() || !scratch.ok() || !dims.ok() || !pooled.ok() || !loss_rows.ok() || !loss_grads.ok() ||
        !received.ok() || !scores.ok() || !projected.ok() || !secure_input.ok()) {
      refusal_ = Status::ResourceExhausted();
    } else {
      params_buffer_ = *params;
      grads_ = *grads;
      keeper_embeddings_ = *embeddings;
      own_encoding_ = *own;
      packed_ = *packed;
      scratch_ = *scratch;
      receiver_of_dim_ = *dims;
      pooled_rows_ = *pooled;
      loss_rows_ = *loss_rows;
      loss_grads_ = *loss_grads;
      received_grad_ = *received;
      scores_ = *scores;
      secure_input_ = *secure_input;
      // What the model sees of this device's features: the public
      // projection of them, or themselves.
      model_input_ = own_features_;
      if (p.projection != 0) {
        refusal_ = ProjectFeatures(p.projection_seed, own_features_, *projected);
        model_input_ = Span<const float>(projected->data(), projected->size());
      }
      if (refusal_.ok()) refusal_ = trainer_.Bind(shape_, kind, workload_, *rows, *csr, *scalars);
    }
  }
  // Keys: every neighbour, also when this device refuses: its notices tell
  // the neighbours not to wait for it. Mask peers come with each
  // aggregation.
  keys_.StartJob(job_key_.key(), false, [](size_t) { return true; });
  DestroyAggregationLink();
  if (refusal_.ok() && p.secure_sum) StartAggregationLink();
  return Status::Ok();
}

// ---- Secure sum: the aggregation link -------------------------------------------------------

bool LumosTrainRole::SecureSumMemoryFits(const TrainParameters& p) const {
  const TrainSecureSumMemory& m = secure_memory_;
  // A device without room for a single mask peer could only refuse every
  // aggregation: it refuses the job instead, and says so in round 1.
  return secure_random_ != nullptr && !m.peers.empty() && m.shares.size() >= 2 * m.peers.size() &&
         m.points.size() >= m.peers.size() && !m.keys.empty() && !m.held.empty() &&
         TrainSecureLength(p.parameters) > p.parameters;
}

// The link seals to neighbours and partners with their keys and draws from
// the role's seal counter (secagg/aggregation_link.h); the role opens their
// messages itself.
void LumosTrainRole::StartAggregationLink() {
  secagg::AggregationLinkMemory m;
  m.aggregation.peers = secure_memory_.peers;
  m.aggregation.shares = secure_memory_.shares;
  m.aggregation.points = secure_memory_.points;
  m.aggregation.vector = secure_input_;
  m.keys = secure_memory_.keys;
  m.held = secure_memory_.held;
  link_ = new (link_storage_) secagg::AggregationLink(own_id_, m, credentials_, *secure_random_);
  link_->SetPairKeySource(pair_source_);
  link_->set_counter(&next_counter_);
  link_->SetKnownKeys(&keys_);
  link_->StartJob(job_id_, job_key_.key());
  epoch_aggregation_ = 0;
}

void LumosTrainRole::DestroyAggregationLink() {
  if (link_ == nullptr) return;
  link_->EndJob();
  link_->~AggregationLink();  // its client wipes its secrets
  link_ = nullptr;
}

void LumosTrainRole::OnAggregationRecord(uint32_t kind, ConstByteSpan bytes, uint32_t round) {
  if (link_ == nullptr || phase_ == Phase::kIdle || phase_ == Phase::kDone) {
    ++stats_.rejected;
    return;
  }
  link_->OnRecord(kind, bytes);
  // This epoch's aggregation is the one started in its round.
  const secagg::AggregationClient& client = link_->client();
  if (kind == secagg::kAggStart && phase_ == Phase::kEpoch && round == epoch_round_ &&
      client.state() != secagg::AggregationClient::State::kIdle) {
    epoch_aggregation_ = client.aggregation();
  }
}

// Mask peers share the bound on key requests in flight with the
// neighbours' and partners' requests.
Status LumosTrainRole::PumpAggregation(device::DeviceSession& session) {
  if (link_ == nullptr) return Status::Ok();
  const uint32_t in_flight = keys_.outstanding();
  const uint32_t room = in_flight < kMaxOutstandingKeyRequests ? kMaxOutstandingKeyRequests - in_flight : 0;
  return link_->Pump(session, epoch_round_ != 0 ? epoch_round_ : 1, room);
}

LumosTrainRole::Stats LumosTrainRole::stats() const {
  Stats s = stats_;
  if (link_ == nullptr) return s;
  const secagg::AggregationLink::Stats& l = link_->stats();
  s.messages_sent += l.sealed_sent;
  s.messages_received += l.opened;
  s.rejected += l.rejected + l.duplicates;
  s.key_failures += l.key_failures;
  s.bytes_up += l.bytes_up;
  s.held_dropped = l.held_dropped;
  return s;
}

// The input: the gradient contribution in the epoch's code, then the
// metric words (train_format.h, TrainSecureWord). Counts saturate at
// kTrainSecureCountClip so that no sum can wrap.
Status LumosTrainRole::EncodeSecureInput() {
  const size_t n = grads_.size();
  if (secure_input_.size() != TrainSecureLength(static_cast<uint32_t>(n))) return Status::FailedPrecondition();
  NODEFL_TRY_ASSIGN(size_t clipped,
                    secagg::EncodeFixedPoint(CodeOf(secure_clip_, secure_scale_log2_),
                                             Span<const float>(grads_.data(), n), Span<uint32_t>(secure_input_.data(), n)));
  uint32_t* extra = secure_input_.data() + n;
  for (uint32_t i = 0; i < kTrainSecureExtras; ++i) extra[i] = 0;
  const bool trained = metrics_.trained;
  const bool validation = !link() && metrics_.labelled && split_ == 1;
  const float losses[2] = {trained ? static_cast<float>(metrics_.loss) : 0.0f,
                           validation ? static_cast<float>(metrics_.loss) : 0.0f};
  NODEFL_TRY_ASSIGN(size_t losses_clipped,
                    secagg::EncodeFixedPoint(CodeOf(kTrainSecureLossClip, secure_loss_scale_log2_),
                                             Span<const float>(losses, 2), Span<uint32_t>(extra + kSecureLoss, 2)));
  clipped += losses_clipped;
  stats_.clipped += clipped;
  extra[kSecureTrained] = trained ? 1u : 0u;
  extra[kSecureTerms] = trained ? CountWord(metrics_.terms) : 0u;
  extra[kSecureClippers] = clipped > 0 ? 1u : 0u;
  extra[kSecureClipped] = CountWord(clipped);
  if (!link() && metrics_.labelled && split_ <= 2) {
    extra[kSecureLabelled + split_] = 1;
    extra[kSecureCorrect + split_] = metrics_.correct ? 1u : 0u;
  }
  return Status::Ok();
}

// A training epoch with secure sum: the link task's scores first (plain
// records, as without), then the input once this epoch's aggregation has
// started; the round is reported when the masked vector is out or the
// device's part ended without it.
Status LumosTrainRole::UploadSecure(device::DeviceSession& session) {
  NODEFL_TRY(UploadScores(session));
  if (scores_cursor_ < score_count_) return Status::Ok();
  using State = secagg::AggregationClient::State;
  secagg::AggregationClient& client = link_->client();
  if (epoch_aggregation_ == 0 || client.aggregation() != epoch_aggregation_) return Status::Ok();  // on its way
  Status outcome = Status::Ok();
  if (!secure_input_set_) {
    secure_input_set_ = true;
    outcome = EncodeSecureInput();
    if (outcome.ok()) outcome = client.SetInput(Span<const uint32_t>(secure_input_.data(), secure_input_.size()));
  }
  NODEFL_TRY(PumpAggregation(session));
  const State s = client.state();
  const bool uploaded = s == State::kAwaitReveal || s == State::kRevealing || s == State::kDone;
  const bool ended = s == State::kAborted || s == State::kRefused;
  // CanSend after the drain: whatever the client had due (a refusal too)
  // went out before the report.
  if (!session.CanSend() || (outcome.ok() && !uploaded && !ended)) return Status::Ok();
  if (outcome.ok() && !uploaded) outcome = s == State::kRefused ? client.refusal() : Status::Aborted();
  NODEFL_TRY(Report(session, epoch_round_, outcome));
  if (uploaded) {
    ++stats_.epochs;
    ++stats_.aggregations;
  }
  step_ = EpochStep::kDone;
  return Status::Ok();
}

void LumosTrainRole::EndJobKeys() {
  keys_.EndJob();
  if (link_ != nullptr) link_->EndJob();
  job_key_.End();
}

// k-ary randomised response, once per job (strict); the raw label in paper
// mode, recorded as the unbounded release it is.
Status LumosTrainRole::ReleaseLabel() {
  if (link() || label_ < 0 || static_cast<uint32_t>(label_) >= params_.classes) {
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
  if (k == nullptr) {
    if (link_ != nullptr) (void)link_->OnCertificate(certificate);  // an answer about a mask peer, or nobody's
    return;
  }
  ++keys_settled_;
  if (k->state != roles::PeerKeyState::kReady) ++stats_.key_failures;
  TrainPeer* peer = FindPeer(k->id);
  if (peer == nullptr || peer->held_size == 0) return;
  const uint8_t size = peer->held_size;
  peer->held_size = 0;
  if (k->state == roles::PeerKeyState::kReady) {
    OpenRelayed(peer->id, *k, ConstByteSpan(peer->held, size));
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
  const FeatureRange range = ModelFeatureRange(params_);
  Result<OneBitParams> op =
      MakeOneBitParams(ModeOf(params_), params_.epsilon, bins, ModelFeatures(params_), range.lower, range.upper);
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
  const size_t d = ModelFeatures(params_);
  NODEFL_TRY(AssignReleasedDimensions(noise_, feature_params_, receiver_of_dim_));
  // Bin by bin (each released dim is randomised exactly once, in its bin's
  // call): keeper b gets bin b, and the union of the bins, recovered, is
  // what the own leaves carry in strict mode (post-processing of what the
  // keepers hold together, so it costs nothing more).
  const size_t packed = OneBitPackedSize(d);
  Span<float> encoded(scratch_.data(), d);
  for (size_t i = 0; i < d; ++i) own_encoding_[i] = 0.5f;
  for (uint32_t b = 0; b < bins; ++b) {
    NODEFL_TRY(EncodeOneBitPartial(noise_, feature_params_, model_input_, receiver_of_dim_, b, encoded));
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
  const Span<const float> own = params_.paper ? model_input_ : Span<const float>(own_encoding_);
  const uint32_t d = ModelFeatures(params_);
  for (uint32_t k = 0; k < at.own_leaves(); ++k) {
    for (uint32_t f = 0; f < d; ++f) h0(at.OwnLeaf(k), f) = own[f];
  }
}

// ---- Epochs ---------------------------------------------------------------------------------

void LumosTrainRole::StartEpoch(const TrainParameters& p, uint32_t round) {
  epoch_ = p.epoch;
  epoch_round_ = round;
  epoch_train_ = p.train;
  // The codes come with every epoch (the server sizes them for the devices
  // it asks); the setup said whether this job sums securely at all.
  secure_epoch_ = p.train && p.secure_sum && params_.secure_sum && link_ != nullptr;
  secure_clip_ = p.secure_clip;
  secure_scale_log2_ = p.secure_scale_log2;
  secure_loss_scale_log2_ = p.secure_loss_scale_log2;
  epoch_aggregation_ = 0;
  secure_input_set_ = false;
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
  expected_pooled_ = expected_pooled_gradients_ = pooled_got_ = pooled_gradients_got_ = 0;
  pool_gradient_ready_ = false;
  score_count_ = 0;
  scores_cursor_ = 0;
  for (float& g : received_grad_) g = 0.0f;
  for (TrainPeer& peer : peers_) {
    const bool keyed = !peer.absent;
    peer.embedding_due = peer.gradient_due = false;
    peer.gradient_received = false;
    if (keyed && peer.keeps_me) {
      ++expected_embeddings_;
      // An embedding of this epoch may have come before its JobStart.
      if (peer.embedding_epoch == epoch_) ++embeddings_got_;
    }
    if (keyed && peer.in_tree) ++expected_gradients_;
  }
  // Link task: every neighbour and partner taking part trades pooled
  // embeddings (one may have come before this JobStart) and gradients.
  Span<TrainPeer> partners(partners_.data(), partners_used_);
  for (Span<TrainPeer> group : {peers_, partners}) {
    for (TrainPeer& peer : group) {
      peer.pooled_due = peer.pooled_gradient_due = peer.pooled_gradient_received = false;
      peer.loss_row = 0;
      if (!link() || peer.absent) continue;
      ++expected_pooled_;
      ++expected_pooled_gradients_;
      if (peer.pooled_epoch == epoch_) ++pooled_got_;
    }
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
  pooled_ = true;
  if (link()) {
    // The loss needs the neighbours' and partners' pooled embeddings first.
    Span<TrainPeer> partners(partners_.data(), partners_used_);
    for (Span<TrainPeer> group : {peers_, partners}) {
      for (TrainPeer& peer : group) peer.pooled_due = !peer.absent;
    }
    step_ = EpochStep::kLinkEmbeddings;
    return;
  }
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
        metrics_.terms = 1;
        pool_gradient_ready_ = true;
        (void)trainer_.SetOwnLeafGradient(gradient);
      }
    }
  }
  StartLeafGradients();
}

// Every keeper gets the pool's gradient for its leaf (zero without a loss,
// so that it can go on either way).
void LumosTrainRole::StartLeafGradients() {
  for (TrainPeer& peer : peers_) peer.gradient_due = peer.keeps_me && peer.embedding_epoch == epoch_;
  step_ = EpochStep::kGradients;
}

// Link task, Eq. 33 (sign fixed) at u once every pooled embedding is in:
// positives are the kept neighbours on training edges (the paper's N_u),
// negatives the training partners; held-out edges and evaluation partners
// are scored, each pair at its lower id.
void LumosTrainRole::TryLinkLoss() {
  if (step_ != EpochStep::kLinkEmbeddings || pooled_got_ < expected_pooled_) return;
  const uint32_t out = shape_.out;
  const gnn::ConstRowMap<float> h_u = trainer_.pooled();
  const bool have_pool = trainer_.pool_count() > 0;
  auto row_of = [&](const TrainPeer& peer) {
    return gnn::ConstRowMap<float>(pooled_rows_.data() + size_t{peer.slot} * out, out);
  };
  auto score = [&](const TrainPeer& peer, uint8_t kind) {
    // Without a pool h_u is zero and scores 0: still counted, so that the
    // AUC covers every held-out edge.
    if (peer.id < own_id_ || 2 * (score_count_ + 1) > scores_.size()) return;
    const float logit = h_u.dot(row_of(peer));
    scores_[2 * score_count_] = kind;
    scores_[2 * score_count_ + 1] = ScoreBin(logit);
    ++score_count_;
  };
  Span<TrainPeer> partners(partners_.data(), partners_used_);
  uint32_t positives = 0, negatives = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (TrainPeer& peer : pass == 0 ? peers_ : partners) {
      if (peer.absent || PooledGone(peer)) continue;
      const bool positive = !peer.partner && peer.in_tree;
      const bool negative = peer.partner && peer.link_use == 0;
      if (!peer.partner && peer.link_use != 0) score(peer, peer.link_use == 1 ? kScoreValidationEdge : kScoreTestEdge);
      if (peer.partner && peer.link_use == 1) score(peer, kScoreNegative);
      if (!epoch_train_ || !have_pool || !(pass == 0 ? positive : negative)) continue;
      // Positives, then negatives, in loss_rows_: the neighbours' pass comes
      // first, so the positives are all counted when the partners come.
      peer.loss_row = 1 + (pass == 0 ? positives++ : positives + negatives++);
      gnn::RowMap<float>(loss_rows_.data() + size_t{peer.loss_row - 1} * out, out) = row_of(peer);
    }
  }
  gnn::RowMap<float> d_u = trainer_.d_pooled();
  d_u.setZero();
  const uint32_t terms = positives + negatives;
  if (terms > 0) {
    Result<float> loss = gnn::LinkLoss<float>(
        h_u, gnn::ConstMatrixMap<float>(loss_rows_.data(), positives, out),
        gnn::ConstMatrixMap<float>(loss_rows_.data() + size_t{positives} * out, negatives, out), d_u,
        gnn::MatrixMap<float>(loss_grads_.data(), positives, out),
        gnn::MatrixMap<float>(loss_grads_.data() + size_t{positives} * out, negatives, out));
    if (loss.ok()) {
      metrics_.trained = true;
      metrics_.terms = terms;
      metrics_.loss = *loss;
    } else {
      d_u.setZero();
      for (Span<TrainPeer> group : {peers_, partners}) {
        for (TrainPeer& peer : group) peer.loss_row = 0;
      }
    }
  }
  for (Span<TrainPeer> group : {peers_, partners}) {
    for (TrainPeer& peer : group) peer.pooled_gradient_due = !peer.absent && !PooledGone(peer);
  }
  step_ = EpochStep::kLinkGradients;
}

// Every partner's gradient at h_u in: the total gradient at h_u reaches
// every leaf standing for u (Eq. 31 backwards), then the node task's path.
void LumosTrainRole::TryFinishLink() {
  if (step_ != EpochStep::kLinkGradients || pooled_gradients_got_ < expected_pooled_gradients_) return;
  Span<TrainPeer> partners(partners_.data(), partners_used_);
  for (Span<TrainPeer> group : {peers_, partners}) {
    for (const TrainPeer& peer : group) {
      if (peer.pooled_gradient_due) return;  // ours still to send
    }
  }
  gnn::RowMap<float> d_u = trainer_.d_pooled();
  for (uint32_t i = 0; i < shape_.out; ++i) d_u(i) += received_grad_[i];
  Span<float> gradient(scratch_.data(), shape_.out);
  if (epoch_train_ && trainer_.pool_count() > 0 && trainer_.PoolGradient(gradient).ok()) {
    pool_gradient_ready_ = true;
    (void)trainer_.SetOwnLeafGradient(gradient);
  }
  StartLeafGradients();
}

// ---- Messages -------------------------------------------------------------------------------

void LumosTrainRole::HandleData(const nodefl_wire_JobData& data, uint32_t round) {
  const ConstByteSpan bytes = protocol::BytesOf(data.data);
  if (secagg::IsAggregationKind(data.kind)) {
    OnAggregationRecord(data.kind, bytes, round);
    return;
  }
  if (data.kind == kTrainPartners) {
    AddPartners(bytes);
    return;
  }
  if (data.kind == kTrainPeersGone) {
    MarkPeersGone(bytes);
    return;
  }
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
  if (message.job_id != job_id_) {
    ++stats_.rejected;
    return;
  }
  const ConstByteSpan sealed = protocol::BytesOf(d.sealed);
  TrainPeer* peer = FindPeer(d.src);
  roles::KeyedPeer* k = keys_.Find(d.src);
  if (peer == nullptr || k == nullptr) {
    if (link_ != nullptr) {
      link_->OnDelivery(d);  // a mask peer's
    } else {
      ++stats_.rejected;  // not a neighbour or partner, and no aggregation to be a mask peer of
    }
    return;
  }
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
  OpenRelayed(peer->id, *k, sealed);
}

void LumosTrainRole::OpenRelayed(uint32_t src, roles::KeyedPeer& k, ConstByteSpan sealed) {
  uint64_t counter = 0;
  Result<size_t> opened = seal::Open(k.job_keys, src, own_id_, job_id_, sealed,
                                     ByteSpan(plain_, sizeof(scratch_words_)), &counter);
  if (!opened.ok() || *opened == 0 || !k.window.Accept(counter).ok()) {
    ++stats_.rejected;
    return;
  }
  const ConstByteSpan plaintext(plain_, *opened);
  // The aggregation's peer messages carry their own tag, which no
  // TrainMessageType uses; only neighbours and partners send the rest.
  if (plaintext[0] == secagg::kAggPeerMessageTag) {
    if (link_ == nullptr) {
      ++stats_.rejected;
      return;
    }
    link_->OnPeerPlaintext(src, plaintext);  // counted by the link
    return;
  }
  TrainPeer* peer = FindPeer(src);
  if (peer == nullptr || *opened < kTrainMessageHeaderBytes) {
    ++stats_.rejected;
    return;
  }
  ++stats_.messages_received;
  OnPeerMessage(*peer, plaintext);
}

void LumosTrainRole::MarkPeersGone(ConstByteSpan bytes) {
  const Result<TrainPeersGone> gone = DecodeTrainPeersGone(bytes);
  if (!gone.ok()) {
    ++stats_.rejected;
    return;
  }
  // Another epoch's notice (late, or before this epoch's start) says
  // nothing about this one: the server tells each epoch's anew.
  if (phase_ != Phase::kEpoch || gone->epoch != epoch_) return;
  for (size_t i = 0; i < gone->count; ++i) {
    TrainPeer* found = FindPeer(TrainPeersGoneAt(bytes, i));  // a neighbour or a partner
    if (found == nullptr || found->absent || found->gone_epoch == epoch_) continue;
    TrainPeer& peer = *found;
    peer.gone_epoch = epoch_;
    // Its leaf embedding for our pool: the pool goes without it.
    if (peer.keeps_me && peer.embedding_epoch != epoch_ && expected_embeddings_ > 0) --expected_embeddings_;
    // Our leaf's gradient from its pool: zero, as for a leaf without a loss.
    if (peer.in_tree && !peer.gradient_received && expected_gradients_ > 0) --expected_gradients_;
    if (link()) {
      if (peer.pooled_epoch != epoch_ && expected_pooled_ > 0) --expected_pooled_;
      if (!peer.pooled_gradient_received && expected_pooled_gradients_ > 0) --expected_pooled_gradients_;
    }
    ++stats_.peers_gone;
  }
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
      peer.keeps_me = !peer.absent && !peer.partner && (body[0] & 1u) != 0;  // a partner has no tree leaf for us
      ++notices_;
      return;
    case TrainMessageType::kFeatures: {
      // bins (4) | packed bits of our bin.
      const uint32_t d = ModelFeatures(params_);
      if (!peer.in_tree || peer.features_received || body.size() != 4 + OneBitPackedSize(d)) break;
      const uint32_t bins = LoadU32Le(body.data());
      Result<OneBitParams> op =
          MakeOneBitParams(ModeOf(params_), params_.epsilon, bins, d, ModelFeatureRange(params_).lower,
                           ModelFeatureRange(params_).upper);
      Span<float> values(scratch_.data(), d);
      if (!op.ok() || !UnpackOneBit(body.subspan(4), values).ok() || !RecoverOneBit(*op, values, values).ok()) break;
      gnn::MatrixMap<float> h0 = trainer_.features();
      const uint32_t node = trainer_.nodes().NeighbourLeaf(peer.kept_index);
      for (uint32_t f = 0; f < d; ++f) h0(node, f) = values[f];
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
      if (!peer.in_tree || body.size() != embedding_bytes) break;
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
    case TrainMessageType::kPooledEmbedding:
      if (!link() || peer.absent || body.size() != embedding_bytes || epoch == 0) break;
      if (epoch < epoch_ || (epoch == epoch_ && peer.pooled_epoch == epoch)) {
        ++stats_.stale;
        return;
      }
      for (uint32_t i = 0; i < shape_.out; ++i) {
        pooled_rows_[size_t{peer.slot} * shape_.out + i] = LoadF32Le(body.data() + 4 * i);
      }
      peer.pooled_epoch = epoch;
      if (epoch == epoch_ && phase_ == Phase::kEpoch) ++pooled_got_;
      return;
    case TrainMessageType::kPooledGradient:
      // The gradient of its loss at our h_u: it can come before our own
      // loss is taken, never before our embedding went out.
      if (!link() || peer.absent || body.size() != embedding_bytes) break;
      if (epoch != epoch_ || phase_ != Phase::kEpoch || peer.pooled_gradient_received ||
          step_ < EpochStep::kLinkEmbeddings) {
        ++stats_.stale;
        return;
      }
      for (uint32_t i = 0; i < shape_.out; ++i) received_grad_[i] += LoadF32Le(body.data() + 4 * i);
      peer.pooled_gradient_received = true;
      ++pooled_gradients_got_;
      return;
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
      if (message.job_id == job_id_) HandleData(message.body.job_data, message.round);
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
  return SealAndRelay(peer.id, *k, ConstByteSpan(plain_, kTrainMessageHeaderBytes + body.size()), session);
}

// One device-wide counter for every seal of the job (training messages and
// aggregation messages alike), so no counter repeats under any key.
Status LumosTrainRole::SealAndRelay(uint32_t dst, roles::KeyedPeer& k, ConstByteSpan plaintext,
                                    device::DeviceSession& session) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, epoch_round_ ? epoch_round_ : 1);
  m.body.relay_send.dst = dst;
  const seal::SealHeader header{own_id_, dst, job_id_, next_counter_};
  Result<size_t> sealed = seal::Seal(k.job_keys, header, plaintext, ByteSpan(m.body.relay_send.sealed.bytes));
  if (!sealed.ok()) return sealed.status();
  m.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
  NODEFL_TRY(session.Send(m));
  ++next_counter_;
  ++stats_.messages_sent;
  return Status::Ok();
}

// Whatever is due to neighbours and partners, as far as the session has room.
Status LumosTrainRole::Flush(device::DeviceSession& session) {
  for (TrainPeer& peer : peers_) NODEFL_TRY(FlushPeer(peer, session));
  for (TrainPeer& peer : Span<TrainPeer>(partners_.data(), partners_used_)) NODEFL_TRY(FlushPeer(peer, session));
  return Status::Ok();
}

Status LumosTrainRole::FlushPeer(TrainPeer& peer, device::DeviceSession& session) {
  if (!session.CanSend()) return Status::Ok();
  const roles::KeyedPeer* k = keys_.Find(peer.id);
  if (k == nullptr || k->state != roles::PeerKeyState::kReady) return Status::Ok();
  uint8_t body[4 * 256];
  if (!peer.notice_sent && phase_ >= Phase::kNotices) {
    body[0] = static_cast<uint8_t>((peer.in_tree ? 1u : 0u) | (refusal_.ok() ? 2u : 0u));
    NODEFL_TRY(SendMessage(peer, TrainMessageType::kKeepNotice, ConstByteSpan(body, 1), session));
    peer.notice_sent = true;
    if (!session.CanSend()) return Status::Ok();
  }
  if (peer.features_due) {
    const size_t packed = OneBitPackedSize(ModelFeatures(params_));
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
  if (phase_ != Phase::kEpoch || shape_.out > 256) return Status::Ok();
  const uint32_t out = shape_.out;
  auto send_row = [&](TrainMessageType type, const float* row, bool* due) -> Status {
    if (!*due || !session.CanSend()) return Status::Ok();
    for (uint32_t i = 0; i < out; ++i) StoreF32Le(row != nullptr ? row[i] : 0.0f, body + 4 * i);
    NODEFL_TRY(SendMessage(peer, type, ConstByteSpan(body, 4 * out), session));
    *due = false;
    return Status::Ok();
  };
  if (peer.embedding_due) {
    const gnn::ConstRowMap<float> leaf = trainer_.NeighbourLeaf(peer.kept_index);
    NODEFL_TRY(send_row(TrainMessageType::kLeafEmbedding, leaf.data(), &peer.embedding_due));
  }
  // Link task: our pooled embedding, then the gradient of our loss at its
  // (zero when it was not in the loss).
  if (peer.pooled_due) {
    const gnn::ConstRowMap<float> h_u = trainer_.pooled();
    NODEFL_TRY(send_row(TrainMessageType::kPooledEmbedding, h_u.data(), &peer.pooled_due));
  }
  if (peer.pooled_gradient_due) {
    const float* row = peer.loss_row == 0 ? nullptr : loss_grads_.data() + size_t{peer.loss_row - 1} * out;
    NODEFL_TRY(send_row(TrainMessageType::kPooledGradient, row, &peer.pooled_gradient_due));
  }
  if (peer.gradient_due) {
    NODEFL_TRY(send_row(TrainMessageType::kLeafGradient, pool_gradient_ready_ ? scratch_.data() : nullptr,
                        &peer.gradient_due));
  }
  return Status::Ok();
}

Status LumosTrainRole::Upload(device::DeviceSession& session) {
  if (secure_epoch_) return UploadSecure(session);
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
  NODEFL_TRY(UploadScores(session));
  if (scores_cursor_ < score_count_) return Status::Ok();
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

// Link task: the scored pairs, before the metrics (train_format.h).
Status LumosTrainRole::UploadScores(device::DeviceSession& session) {
  while (scores_cursor_ < score_count_ && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, epoch_round_);
    m.body.job_data.kind = kTrainLinkScores;
    const size_t left = score_count_ - scores_cursor_;
    const size_t count = left < kTrainScoresPerRecord ? left : kTrainScoresPerRecord;
    uint8_t* q = m.body.job_data.data.bytes;
    StoreU32Le(epoch_, q);
    for (size_t i = 0; i < 2 * count; ++i) q[4 + i] = scores_[2 * scores_cursor_ + i];
    m.body.job_data.data.size = static_cast<pb_size_t>(4 + 2 * count);
    NODEFL_TRY(session.Send(m));
    stats_.bytes_up += 4 + 2 * count;
    scores_cursor_ += count;
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
  const Stats totals = stats();
  r.sent = totals.messages_sent;
  r.received = totals.messages_received;
  r.rejected = totals.rejected;
  r.duplicates = totals.stale;
  return session.Send(m);
}

void LumosTrainRole::OnSessionRestart(bool) {
  keys_.OnRestart();
  if (link_ != nullptr) link_->OnRestart();
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
    NODEFL_TRY(roles::SendWantedKeyRequests(keys_, session, job_id_, 1, kMaxOutstandingKeyRequests));
    // Reveals come after this device's epoch is over: pump in any phase.
    NODEFL_TRY(PumpAggregation(session));
  }
  // Link task: the partners are known once the assignment (sent after
  // them) is in.
  if (phase_ == Phase::kKeys && keys_settled_ >= peers_.size() + partners_used_ && (!link() || split_known_)) {
    phase_ = Phase::kNotices;
  }
  Span<TrainPeer> partners(partners_.data(), partners_used_);
  if (phase_ == Phase::kNotices) {
    // Every keyed neighbour's and partner's notice in (one that failed its
    // keys cannot send one: it counts as absent).
    uint32_t keyed = 0;
    for (Span<TrainPeer> group : {peers_, partners}) {
      for (const TrainPeer& p : group) {
        const roles::KeyedPeer* k = keys_.Find(p.id);
        keyed += k != nullptr && k->state == roles::PeerKeyState::kReady ? 1u : 0u;
      }
    }
    if (notices_ >= keyed) {
      for (Span<TrainPeer> group : {peers_, partners}) {
        for (TrainPeer& p : group) {
          const roles::KeyedPeer* k = keys_.Find(p.id);
          if (k == nullptr || k->state != roles::PeerKeyState::kReady) p.absent = true;
        }
      }
      if (refusal_.ok()) {
        const Status encoded = EncodeFeatures();
        if (!encoded.ok()) refusal_ = encoded;
      }
      features_needed_ = 0;
      for (const TrainPeer& p : peers_) features_needed_ += p.in_tree && !p.absent ? 1u : 0u;
      phase_ = Phase::kFeatures;
    }
  }
  NODEFL_TRY(Flush(session));
  if (phase_ == Phase::kFeatures && session.CanSend()) {
    bool sent = true;
    for (Span<TrainPeer> group : {peers_, partners}) {
      for (const TrainPeer& p : group) sent = sent && !p.features_due && (p.notice_sent || p.absent);
    }
    if (!refusal_.ok() || (sent && features_got_ >= features_needed_)) {
      NODEFL_TRY(Report(session, 1, refusal_));
      phase_ = refusal_.ok() ? Phase::kSetupReported : Phase::kDone;
      if (!refusal_.ok()) EndJobKeys();
    }
    return Status::Ok();
  }
  if (phase_ == Phase::kEpoch) {
    const Span<const float> params(params_buffer_.data(), params_buffer_.size());
    if (step_ == EpochStep::kParams && params_next_ >= params_buffer_.size()) {
      NODEFL_TRY(trainer_.Forward(params, epoch_train_, &crypto::DrbgRandom, &noise_));
      for (TrainPeer& peer : peers_) peer.embedding_due = peer.in_tree && !peer.absent && peer.gone_epoch != epoch_;
      step_ = EpochStep::kEmbeddings;
      NODEFL_TRY(Flush(session));
    }
    TryPool();
    if (step_ == EpochStep::kLinkEmbeddings || step_ == EpochStep::kLinkGradients) {
      NODEFL_TRY(Flush(session));
      TryLinkLoss();
      NODEFL_TRY(Flush(session));
      TryFinishLink();
    }
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
      const Stats totals = stats();
      s.messages_sent = totals.messages_sent;
      s.messages_received = totals.messages_received;
      s.rejected = totals.rejected;
      s.stale = totals.stale;
      s.key_failures = totals.key_failures;
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
      EndJobKeys();
    }
  }
  return Status::Ok();
}

}  // namespace nodefl::lumos
