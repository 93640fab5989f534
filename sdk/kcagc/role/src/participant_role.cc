// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/participant_role.h"

#include <algorithm>
#include <cstring>

#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/secagg/fixed_point.h"

namespace nodefl::kcagc {
namespace {

EngineSettings SettingsOf(const KcagcParameters& p) {
  EngineSettings s;
  s.clusters = p.clusters;
  s.local_clusters = p.mode == KcagcMode::kBasic ? p.clusters : p.local_clusters;
  s.filter.kind = p.filter == KcagcFilter::kNorm ? FilterKind::kNorm : FilterKind::kHalf;
  s.filter.order = p.filter_order;
  s.filter.self_loops = p.self_loops;
  s.space = p.space == KcagcSpace::kFull        ? ClusterSpace::kFull
            : p.space == KcagcSpace::kProjected ? ClusterSpace::kProjected
                                                : ClusterSpace::kWhitened;
  s.space_dims = p.space_dims;
  s.virtual_nodes = p.virtual_nodes == KcagcVirtual::kCentre ? VirtualNodeKind::kCentre : VirtualNodeKind::kIntersection;
  s.iterations = p.iterations;
  s.local_restarts = p.local_restarts;
  s.seed = p.seed;
  s.joint = p.mode == KcagcMode::kJoint;
  return s;
}

}  // namespace

ParticipantRole::ParticipantRole(uint32_t own_id, const ParticipantData& data, const tls::TlsCredentials& credentials,
                                 Drbg& random)
    : own_id_(own_id), data_(data), random_(random), link_(own_id, credentials, random) {}

Status ParticipantRole::StartJob(const nodefl_wire_Envelope& message) {
  if (message.round == 1) {
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      report_.OnRepeatedRound(1);
      return Status::Ok();  // the job we run, again: keep keys and state
    }
    job_id_ = message.job_id;
    phase_ = Phase::kRunning;
    welcomed_ = false;
    engine_.reset();
    for (ArrayBuffer& a : arrays_) a = ArrayBuffer{};
    outbox_.clear();
    clustered_ = false;
    clustering_.clear();
    failure_ = Status::Ok();
    refused_ = false;
    stats_ = Stats{};
    report_.Reset();
    Result<KcagcParameters> params = DecodeKcagcParameters(protocol::BytesOf(message.body.job_start.parameters));
    if (!params.ok()) {
      Refuse(params.status(), 0);
      return Status::Ok();
    }
    params_ = *params;
    NODEFL_TRY(job_key_.Begin(message.job_id, ConstByteSpan(params_.salt, kKcagcSaltBytes), &crypto::DrbgRandom,
                              &random_));
    // The longest sum: every point's distances to every centre (points <=
    // n, centres <= max(k, k̂)); the joint mode's, a product with the
    // widest block the server may send.
    const uint64_t longest =
        uint64_t{data_.num_nodes} * (params_.mode == KcagcMode::kJoint
                                         ? MaxSpectralBlock(data_.num_nodes, SettingsOf(params_))
                                         : std::max(params_.clusters, params_.local_clusters));
    if (params_.participants != data_.participants || longest == 0 || longest > secagg::kMaxAggLength) {
      Refuse(Status::InvalidArgument(), 0);
      return Status::Ok();
    }
    const Status linked =
        link_.StartJob(job_id_, job_key_.key(), params_.participants - 1, static_cast<uint32_t>(longest));
    if (!linked.ok()) Refuse(linked, 0);
    return Status::Ok();
  }
  if (message.job_id != job_id_ || phase_ == Phase::kIdle) return Status::FailedPrecondition();
  if (message.round == 2) {
    if (phase_ == Phase::kRunning) phase_ = Phase::kReporting;
    if (phase_ == Phase::kDone) report_.OnRepeatedRound(2);
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

Status ParticipantRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      return StartJob(message);
    case nodefl_wire_Envelope_peer_certificate_tag:
      if (phase_ != Phase::kIdle && message.job_id == job_id_) link_.OnCertificate(message.body.peer_certificate);
      return Status::Ok();
    case nodefl_wire_Envelope_relay_deliver_tag:
      if (phase_ != Phase::kIdle && message.job_id == job_id_) link_.OnDelivery(message.body.relay_deliver);
      return Status::Ok();
    case nodefl_wire_Envelope_job_data_tag: {
      if (phase_ == Phase::kIdle || message.job_id != job_id_) return Status::Ok();
      const nodefl_wire_JobData& d = message.body.job_data;
      if (secagg::IsAggregationKind(d.kind)) {
        link_.OnRecord(d.kind, protocol::BytesOf(d.data));
      } else {
        OnInstruction(d.kind, protocol::BytesOf(d.data));
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

void ParticipantRole::OnInstruction(uint32_t kind, ConstByteSpan data) {
  if (kind == kKcagcAbort) {
    // The server gave up on the run: stop following it.
    const StatusCode code = data.size() == 1 && data[0] != 0 ? static_cast<StatusCode>(data[0]) : StatusCode::kAborted;
    if (failure_.ok()) failure_ = Status(code);
    engine_.reset();
    return;
  }
  if (refused_ || !failure_.ok() || clustered_) return;  // the run is over for this participant
  const Status followed = Follow(kind, data);
  if (!followed.ok()) {
    Refuse(followed, kind);
    return;
  }
  if (kind != kKcagcArray) ++stats_.instructions;
}

Status ParticipantRole::Follow(uint32_t kind, ConstByteSpan data) {
  if (kind == kKcagcWelcome) return OnWelcome(data);
  if (!welcomed_ || engine_ == nullptr) return Status::FailedPrecondition();
  switch (kind) {
    case kKcagcArray: return OnArray(data);
    case kKcagcContribute: return OnContribute(data);
    case kKcagcLocalCluster: return OnLocalCluster(data);
    case kKcagcStage: return OnStage(data);
    case kKcagcSeedCentres: return OnSeedCentres(data);
    case kKcagcUpdateCentres: return OnUpdateCentres(data);
    case kKcagcEndStage: return OnEndStage(data);
    case kKcagcDone: return OnDone(data);
    case kKcagcSpectralStep: return OnSpectralStep(data);
    default: return Status::InvalidArgument();
  }
}

Status ParticipantRole::OnWelcome(ConstByteSpan data) {
  if (welcomed_) return Status::FailedPrecondition();
  NODEFL_TRY_ASSIGN(const KcagcWelcome w, DecodeKcagcWelcome(data));
  // The server's place for us must be the one our columns were cut for.
  if (w.index != data_.index || w.participants != params_.participants) return Status::InvalidArgument();
  welcomed_ = true;
  engine_ = std::make_unique<ParticipantEngine>(data_.graph(), data_.slice, data_.index);
  // Protocol 1 lines 1-3 and the cluster space, once for the whole run.
  NODEFL_TRY(engine_->Prepare(SettingsOf(params_)));
  uint8_t ready[kKcagcReadyBytes];
  EncodeKcagcReady(KcagcReady{engine_->nodes(), engine_->columns()}, ready);
  Upload(kKcagcReady, std::vector<uint8_t>(ready, ready + sizeof ready));
  return Status::Ok();
}

Status ParticipantRole::OnArray(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const KcagcArrayRun run, DecodeKcagcArrayRun(data));
  if (run.array == KcagcArray::kLocalClusters) return Status::InvalidArgument();
  const bool joint = params_.mode == KcagcMode::kJoint;
  if ((run.array == KcagcArray::kBlock) != joint && run.array != KcagcArray::kAssignment) {
    return Status::InvalidArgument();  // the joint mode's arrays are the blocks and the final clustering
  }
  // No array is longer than a key per node and part (parts <= L), or than
  // the widest block.
  const uint64_t limit = run.array == KcagcArray::kBlock
                             ? uint64_t{data_.num_nodes} * MaxSpectralBlock(data_.num_nodes, SettingsOf(params_))
                             : uint64_t{data_.num_nodes} * params_.participants + 1;
  if (run.total > limit) return Status::OutOfRange();
  ArrayBuffer& a = arrays_[static_cast<uint32_t>(run.array)];
  if (run.offset == 0) {
    a.values.assign(run.total, 0);
    a.received = 0;
  }
  // Runs come in order on the job's stream.
  if (run.total != a.values.size() || run.offset != a.received) return Status::InvalidArgument();
  for (uint32_t i = 0; i < run.count(); ++i) a.values[run.offset + i] = run.at(i);
  a.received += run.count();
  return Status::Ok();
}

Result<const std::vector<uint32_t>*> ParticipantRole::Whole(KcagcArray array, size_t expected) const {
  const ArrayBuffer& a = arrays_[static_cast<uint32_t>(array)];
  if (!a.complete() || a.values.size() != expected) return Status::InvalidArgument();
  return &a.values;
}

Result<Assignment> ParticipantRole::AssignmentOf(size_t points, uint32_t clusters) const {
  NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* values, Whole(KcagcArray::kAssignment, points));
  Assignment out(points);
  for (size_t i = 0; i < points; ++i) {
    const auto c = static_cast<int32_t>((*values)[i]);
    if (c != kUnassigned && (c < 0 || static_cast<uint32_t>(c) >= clusters)) return Status::InvalidArgument();
    out[i] = c;
  }
  return out;
}

Status ParticipantRole::OnContribute(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const KcagcContribute c, DecodeKcagcContribute(data));
  const secagg::FixedPoint code{c.clip, c.scale};
  std::vector<float> values;
  switch (c.what) {
    case KcagcContribution::kRangeBound: {
      NODEFL_TRY_ASSIGN(const float bound, engine_->RangeBound(code));
      values.assign(1, bound);
      break;
    }
    case KcagcContribution::kSeedDistances: {
      NODEFL_TRY_ASSIGN(values, engine_->SeedDistances(c.argument));
      break;
    }
    case KcagcContribution::kLocalSeeding: {
      NODEFL_TRY_ASSIGN(values, engine_->LocalSeeding(c.argument, c.stream));
      break;
    }
    case KcagcContribution::kDistances: {
      NODEFL_TRY_ASSIGN(values, engine_->Distances(c.argument));
      break;
    }
    case KcagcContribution::kSpectralProduct: {
      NODEFL_TRY_ASSIGN(values, engine_->SpectralProduct(c.argument));
      break;
    }
  }
  std::vector<uint32_t> codes(values.size());
  NODEFL_TRY_ASSIGN(const size_t clipped, secagg::EncodeFixedPoint(code, Span<const float>(values.data(), values.size()),
                                                                   Span<uint32_t>(codes.data(), codes.size())));
  stats_.clipped += clipped;
  ++stats_.contributions;
  stats_.scalars += codes.size();
  link_.Offer(c.aggregation, std::move(codes));
  return Status::Ok();
}

Status ParticipantRole::OnLocalCluster(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const uint32_t clusters, DecodeKcagcWord(data));
  if (params_.mode == KcagcMode::kBasic || clusters != params_.local_clusters) return Status::InvalidArgument();
  // Protocol 3 line 2: cluster alone, then tell P_L (the server) the ids.
  NODEFL_TRY_ASSIGN(const Assignment local, engine_->LocalClusters());
  std::vector<uint32_t> ids(local.begin(), local.end());
  UploadArray(KcagcArray::kLocalClusters, ids);
  return Status::Ok();
}

Status ParticipantRole::OnStage(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const KcagcStage s, DecodeKcagcStage(data));
  if (s.members > params_.participants) return Status::InvalidArgument();
  EngineStage stage;
  stage.tree_node = s.tree_node;
  stage.position = s.position;
  if (s.points == KcagcPoints::kVirtual) {
    // The intersections, as the arrays before this record laid them out.
    const uint32_t n = data_.num_nodes;
    if (s.groups > n || s.parts > params_.participants) return Status::InvalidArgument();
    NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* offsets, Whole(KcagcArray::kGroupOffsets, size_t{s.groups} + 1));
    if ((*offsets)[0] != 0) return Status::InvalidArgument();
    for (uint32_t g = 0; g < s.groups; ++g) {
      if ((*offsets)[g + 1] <= (*offsets)[g]) return Status::InvalidArgument();  // groups are non-empty
    }
    NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* nodes, Whole(KcagcArray::kGroupNodes, offsets->back()));
    for (uint32_t v : *nodes) {
      if (v >= n) return Status::InvalidArgument();
    }
    NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* keys,
                      Whole(KcagcArray::kGroupKeys, size_t{s.groups} * s.parts));
    auto groups = std::make_shared<Intersections>();
    groups->parts = s.parts;
    groups->offsets = *offsets;
    groups->nodes = *nodes;
    groups->keys.assign(keys->begin(), keys->end());
    stage.virtual_nodes = true;
    stage.groups = std::move(groups);
    stage.part = s.part;
    stage.child = s.child;
  }
  return engine_->BeginStage(stage);
}

Status ParticipantRole::OnSeedCentres(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const uint32_t count, DecodeKcagcWord(data));
  NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* seeds, Whole(KcagcArray::kSeeds, count));
  return engine_->CentresFromSeeds(Span<const uint32_t>(seeds->data(), seeds->size()));
}

Status ParticipantRole::OnUpdateCentres(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const uint32_t points, DecodeKcagcWord(data));
  if (points != engine_->points()) return Status::InvalidArgument();
  NODEFL_TRY_ASSIGN(const Assignment assignment,
                    AssignmentOf(points, std::max(params_.clusters, params_.local_clusters)));
  return engine_->UpdateCentres(assignment);
}

Status ParticipantRole::OnEndStage(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const uint32_t kept, DecodeKcagcWord(data));
  return engine_->EndStage(kept);
}

Status ParticipantRole::OnDone(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const uint32_t nodes, DecodeKcagcWord(data));
  if (nodes != data_.num_nodes) return Status::InvalidArgument();
  NODEFL_TRY_ASSIGN(Assignment final_clusters, AssignmentOf(nodes, params_.clusters));
  clustering_ = std::move(final_clusters);
  clustered_ = true;
  return Status::Ok();
}

Status ParticipantRole::OnSpectralStep(ConstByteSpan data) {
  NODEFL_TRY_ASSIGN(const KcagcSpectralStep step, DecodeKcagcSpectralStep(data));
  if (params_.mode != KcagcMode::kJoint || step.rows != data_.num_nodes) return Status::InvalidArgument();
  NODEFL_TRY_ASSIGN(const std::vector<uint32_t>* bits, Whole(KcagcArray::kBlock, size_t{step.rows} * step.columns));
  // The floats' bit patterns, row-major as the block's own storage.
  Matrix block(step.rows, step.columns);
  static_assert(sizeof(float) == sizeof(uint32_t), "binary32");
  std::memcpy(block.data(), bits->data(), bits->size() * sizeof(uint32_t));
  NODEFL_TRY(engine_->TakeSpectralBlock(step.step, std::move(block)));
  stats_.spectral_steps = engine_->spectral_steps();
  return Status::Ok();
}

void ParticipantRole::Upload(uint32_t kind, std::vector<uint8_t> bytes) {
  stats_.bytes_uploaded += bytes.size();
  outbox_.emplace_back(kind, std::move(bytes));
}

void ParticipantRole::UploadArray(KcagcArray array, const std::vector<uint32_t>& values) {
  const auto total = static_cast<uint32_t>(values.size());
  for (uint32_t offset = 0; offset < total; offset += kKcagcValuesPerRecord) {
    const uint32_t count = std::min(kKcagcValuesPerRecord, total - offset);
    std::vector<uint8_t> record(kKcagcArrayHeaderBytes + 4 * size_t{count});
    // Cannot fail: the record is sized for the run.
    EncodeKcagcArrayRun(array, total, offset, Span<const uint32_t>(values.data() + offset, count),
                        ByteSpan(record.data(), record.size()))
        .IgnoreError();
    Upload(kKcagcLocalClusters, std::move(record));
  }
}

void ParticipantRole::Refuse(Status why, uint32_t kind) {
  if (refused_) return;
  refused_ = true;
  failure_ = why.ok() ? Status::Unknown() : why;
  uint8_t record[kKcagcRefuseBytes];
  EncodeKcagcRefuse(KcagcRefuse{failure_.code(), kind}, record);
  Upload(kKcagcRefuse, std::vector<uint8_t>(record, record + sizeof record));
}

Status ParticipantRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_KCAGC;
  r.code = static_cast<uint32_t>(outcome.code());
  r.sent = stats_.contributions;
  r.received = stats_.instructions;
  const AggregationLink::Stats& l = link_.stats();
  r.duplicates = l.duplicates + (link_.client() != nullptr ? link_.client()->stats().replays : 0);
  r.rejected = l.rejected + l.held_dropped +
               (link_.client() != nullptr
                    ? link_.client()->stats().records_refused + link_.client()->stats().messages_refused
                    : 0);
  return session.Send(m);
}

Status ParticipantRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (job_key_.due()) return Status::Ok();  // the server must hold our key before peers ask for it
  while (!outbox_.empty() && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, 1);
    m.body.job_data.kind = outbox_.front().first;
    NODEFL_TRY(protocol::SetBytes(&m.body.job_data.data, ConstByteSpan(outbox_.front().second.data(),
                                                                         outbox_.front().second.size())));
    NODEFL_TRY(session.Send(m));
    outbox_.pop_front();
  }
  NODEFL_TRY(link_.Drain(session));
  if (phase_ == Phase::kReporting && outbox_.empty() && session.CanSend()) {
    const Status outcome = clustered_ ? Status::Ok() : (!failure_.ok() ? failure_ : Status::FailedPrecondition());
    NODEFL_TRY(Report(session, 2, outcome));
    phase_ = Phase::kDone;
    job_key_.End();
    link_.EndJob();
    engine_.reset();
  }
  return Status::Ok();
}

void ParticipantRole::OnSessionRestart(bool) {
  link_.OnSessionRestart();
  if (phase_ == Phase::kRunning || phase_ == Phase::kReporting) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

}  // namespace nodefl::kcagc
