// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/histogram_role.h"

#include "nodefl/privacy/neighbour_cap.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::fedwalk {
namespace {

// Upload transfer ids: a tag, the round and a per-role serial, so they are
// non-zero and never repeat within a connection.
constexpr uint64_t kTransferTag = uint64_t{0x4648} << 48;  // "FH"

bool SameJob(const HistogramParameters& a, const HistogramParameters& b) {
  return a.releases == b.releases && a.vertex_count == b.vertex_count;
}

bool SameRound(const HistogramParameters& a, const HistogramParameters& b) {
  return SameJob(a, b) && a.release == b.release && a.clusters == b.clusters && a.epsilon == b.epsilon;
}

}  // namespace

FedWalkHistogramRole::FedWalkHistogramRole(uint32_t own_id, const HistogramStorage& storage, Drbg& rng,
                                           PrivacyLedger& ledger)
    : own_id_(own_id), storage_(storage), rng_(rng), ledger_(ledger), receiver_(&Sink, this) {}

Status FedWalkHistogramRole::Init() {
  return Init(static_cast<uint32_t>(storage_.neighbours.size()), kNoNeighbourCap);
}

Status FedWalkHistogramRole::Init(uint32_t actual_degree) {
  const uint32_t given = static_cast<uint32_t>(storage_.neighbours.size());
  return Init(actual_degree, actual_degree > given ? given : kNoNeighbourCap);
}

Status FedWalkHistogramRole::Init(uint32_t actual_degree, uint32_t neighbour_cap) {
  const Span<HistogramNeighbour> n = storage_.neighbours;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i].id == own_id_) return Status::InvalidArgument();
    if (i > 0 && n[i - 1].id >= n[i].id) return Status::InvalidArgument();
  }
  if (actual_degree < n.size() || neighbour_cap < n.size() || storage_.cells.empty()) {
    return Status::InvalidArgument();
  }
  if (actual_degree > n.size() && neighbour_cap == kNoNeighbourCap) return Status::InvalidArgument();
  actual_degree_ = actual_degree;
  neighbour_cap_ = neighbour_cap;
  initialised_ = true;
  return Status::Ok();
}

bool FedWalkHistogramRole::finished() const {
  return in_job_ && settled_ && output_ == Output::kReported &&
         (round_ == params_.releases || !outcome_.ok());
}

Span<const int32_t> FedWalkHistogramRole::histogram() const {
  return Span<const int32_t>(storage_.cells.data(), has_release_ ? params_.clusters : 0);
}

// ---- Job and round state ----------------------------------------------------------

void FedWalkHistogramRole::StartJob(uint64_t job_id, const HistogramParameters& params) {
  in_job_ = true;
  job_id_ = job_id;
  params_ = params;
  // Public numbers only: the app's cap and the job's vertex count.
  sensitivity_factor_ =
      neighbour_cap_ == kNoNeighbourCap ? 1u : CapSensitivityFactor(neighbour_cap_, params.vertex_count);
  ledger_.BeginJob(job_id);
  job_epsilon_ = 0.0;
  stats_ = Stats{};
  round_ = 0;
}

void FedWalkHistogramRole::EnterRound(const HistogramParameters& params, uint32_t deadline_ms) {
  params_ = params;
  round_ = params.release;
  receiver_.Reset();
  receiving_ = false;
  partition_done_ = false;
  partition_outcome_ = Status::Ok();
  settled_ = false;
  outcome_ = Status::Ok();
  deadline_pending_ = true;
  deadline_ms_ = deadline_ms;
  deadline_us_ = 0;
  discard_ = false;
  has_release_ = false;
  output_ = Output::kNothing;
  output_on_connection_ = false;
  upload_ = false;
  stats_.neighbours_placed = 0;
  for (HistogramNeighbour& n : storage_.neighbours) n.cluster = kAbsentCluster;
  // A refusal that depends on public figures only (C and the app's cells).
  if (params.clusters > storage_.cells.size()) Settle(Status::ResourceExhausted(), false, 0, 0.0);
}

void FedWalkHistogramRole::RepeatRound(uint32_t deadline_ms) {
  if (!settled_ || !has_release_) {
    // Nothing was released in this round: start it over.
    EnterRound(params_, deadline_ms);
    return;
  }
  // The release stands. A re-sent partition is only verified; the stored
  // output goes out again unless it already is (or was) on this connection,
  // in which case only the report is repeated.
  receiver_.Reset();
  receiving_ = false;
  discard_ = true;
  if (output_on_connection_) {
    if (output_ == Output::kReported) output_ = Output::kReport;
  } else {
    output_ = upload_ ? Output::kUploadHeader : Output::kReport;
  }
}

void FedWalkHistogramRole::Settle(Status outcome, bool upload, uint32_t releases, double epsilon) {
  settled_ = true;
  outcome_ = outcome;
  // A transfer still in flight keeps being verified (the connection stays
  // in step with the server); its data is dropped.
  discard_ = true;
  upload_ = outcome.ok() && upload;
  report_releases_ = releases;
  report_epsilon_ = epsilon;
  output_ = upload_ ? Output::kUploadHeader : Output::kReport;
  if (!outcome.ok()) ++stats_.failures;
}

void FedWalkHistogramRole::OnSessionRestart(bool /*resumed*/) {
  receiver_.Reset();
  receiving_ = false;
  output_on_connection_ = false;
  if (!in_job_ || !settled_) return;
  if (output_ == Output::kUploadChunks || output_ == Output::kReport || output_ == Output::kReported) {
    output_ = upload_ ? Output::kUploadHeader : Output::kReport;
  }
}

// ---- Incoming messages ------------------------------------------------------------

Status FedWalkHistogramRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  if (!initialised_) return Status::FailedPrecondition();
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag: return OnJobStart(message);
    case nodefl_wire_Envelope_chunk_header_tag: return OnChunkHeader(message);
    case nodefl_wire_Envelope_chunk_tag: return OnChunk(message);
    default: return Status::Unimplemented();
  }
}

Status FedWalkHistogramRole::OnJobStart(const nodefl_wire_Envelope& message) {
  NODEFL_TRY_ASSIGN(const HistogramParameters params,
                    DecodeHistogramParameters(protocol::BytesOf(message.body.job_start.parameters)));
  if (params.release != message.round) return Status::InvalidArgument();
  const uint32_t deadline_ms = message.body.job_start.deadline_ms;
  const bool same_job = in_job_ && message.job_id == job_id_;
  if (!same_job) {
    // A new job starts with its first round only.
    if (params.release != 1) return Status::FailedPrecondition();
    StartJob(message.job_id, params);
    EnterRound(params, deadline_ms);
    return Status::Ok();
  }
  if (!SameJob(params, params_)) return Status::InvalidArgument();
  if (params.release < round_) return Status::FailedPrecondition();
  if (params.release == round_) {
    // The same round again: its parameters cannot change.
    if (!SameRound(params, params_)) return Status::InvalidArgument();
    RepeatRound(deadline_ms);
    return Status::Ok();
  }
  // Moving on (the server may skip a round this device did not finish).
  EnterRound(params, deadline_ms);
  return Status::Ok();
}

Status FedWalkHistogramRole::Sink(void* context, uint64_t offset, ConstByteSpan data) {
  auto* self = static_cast<FedWalkHistogramRole*>(context);
  if (!self->discard_) self->filter_.Feed(offset, data);
  return Status::Ok();
}

Status FedWalkHistogramRole::OnChunkHeader(const nodefl_wire_Envelope& message) {
  if (!in_job_ || message.job_id != job_id_ || message.round != round_) return Status::FailedPrecondition();
  const nodefl_wire_ChunkHeader& header = message.body.chunk_header;
  if (header.artefact != static_cast<uint32_t>(HistogramArtefact::kPartition) ||
      header.total_bytes != PartitionArtefactBytes(params_.vertex_count)) {
    return Status::InvalidArgument();
  }
  NODEFL_TRY(receiver_.OnHeader(header));
  receiving_ = true;
  // A re-sent partition replaces what an earlier copy delivered.
  partition_done_ = false;
  if (!discard_) filter_.Begin(storage_.neighbours, params_.clusters, params_.vertex_count);
  return Status::Ok();
}

Status FedWalkHistogramRole::OnChunk(const nodefl_wire_Envelope& message) {
  if (!in_job_ || message.job_id != job_id_ || message.round != round_) return Status::FailedPrecondition();
  // With no transfer announced the receiver refuses the chunk itself.
  NODEFL_TRY(receiver_.OnChunk(message.body.chunk));
  if (receiver_.complete() && receiving_) {
    receiving_ = false;
    partition_done_ = true;
    if (!discard_) {
      partition_outcome_ = filter_.Finish();
      stats_.neighbours_placed = filter_.neighbours_placed();
    }
  }
  return Status::Ok();
}

// ---- The release ------------------------------------------------------------------

void FedWalkHistogramRole::Release() {
  if (!partition_outcome_.ok()) {
    Settle(partition_outcome_, false, 0, 0.0);
    return;
  }
  const Span<int32_t> cells(storage_.cells.data(), params_.clusters);
  // Asked first, with the nominal epsilon, so that a refused release draws
  // no noise.
  Status s = ledger_.CanRecord(kPhaseClusterHistogram, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict,
                               ReleaseCost{params_.epsilon});
  // With a capped neighbour list one edge can move two cells: noise for
  // epsilon / 2 keeps the release epsilon-DP.
  double spent = 0.0;
  if (s.ok()) {
    s = MakeClusterHistogram(rng_, params_.epsilon / sensitivity_factor_, storage_.neighbours, cells, &spent);
  }
  spent *= sensitivity_factor_;
  // Accounted before it can leave: a release the ledger cannot hold is not
  // made (the noised cells are wiped).
  if (s.ok()) s = ledger_.Record(kPhaseClusterHistogram, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, spent);
  if (!s.ok()) {
    for (int32_t& c : cells) c = 0;
    Settle(s, false, 0, 0.0);
    return;
  }
  has_release_ = true;
  job_epsilon_ += spent;
  ++stats_.releases;
  Settle(Status::Ok(), true, 1, spent);
}

// ---- Outgoing messages --------------------------------------------------------------

void FedWalkHistogramRole::ProduceHistogram(void* context, uint64_t offset, ByteSpan out) {
  const auto* self = static_cast<const FedWalkHistogramRole*>(context);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t p = offset + i;
    const auto word = static_cast<uint32_t>(self->storage_.cells[static_cast<size_t>(p / kHistogramCellBytes)]);
    out[i] = static_cast<uint8_t>(word >> (8 * (p % kHistogramCellBytes)));
  }
}

Status FedWalkHistogramRole::SendReport(device::DeviceSession& session) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round_);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS;
  r.code = static_cast<uint32_t>(outcome_.code());
  r.releases = report_releases_;
  r.epsilon = report_epsilon_;
  NODEFL_TRY(session.Send(m));
  ++stats_.reports;
  return Status::Ok();
}

Status FedWalkHistogramRole::SendOutput(device::DeviceSession& session) {
  while (session.CanSend()) {
    switch (output_) {
      case Output::kNothing:
      case Output::kReported:
        return Status::Ok();
      case Output::kUploadHeader: {
        const uint64_t transfer_id = kTransferTag | uint64_t{round_} << 40 | ++upload_serial_;
        sender_ = StreamingChunkSender(ClusterHistogramBytes(params_.clusters), &ProduceHistogram, this, transfer_id,
                                       static_cast<uint32_t>(HistogramArtefact::kClusterHistogram));
        nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_chunk_header_tag, job_id_, round_);
        // The envelope's chunk buffer is free while a header is built.
        NODEFL_TRY(sender_.MakeHeader(&m.body.chunk_header, ByteSpan(m.body.chunk.data.bytes)));
        NODEFL_TRY(session.Send(m));
        output_on_connection_ = true;
        output_ = Output::kUploadChunks;
        ++stats_.uploads;
        break;
      }
      case Output::kUploadChunks: {
        nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_chunk_tag, job_id_, round_);
        NODEFL_TRY_ASSIGN(const bool more, sender_.NextChunk(&m.body.chunk));
        if (!more) {
          output_ = Output::kReport;
          break;
        }
        NODEFL_TRY(session.Send(m));
        break;
      }
      case Output::kReport:
        NODEFL_TRY(SendReport(session));
        output_on_connection_ = true;
        output_ = Output::kReported;
        break;
    }
  }
  return Status::Ok();
}

Status FedWalkHistogramRole::OnPoll(uint64_t now_us, device::DeviceSession& session) {
  if (!in_job_) return Status::Ok();
  if (deadline_pending_) {
    deadline_pending_ = false;
    deadline_us_ = deadline_ms_ == 0 ? 0 : now_us + uint64_t{deadline_ms_} * 1000;
  }
  if (!settled_) {
    if (deadline_us_ != 0 && now_us > deadline_us_) {
      Settle(Status::DeadlineExceeded(), false, 0, 0.0);
    } else if (partition_done_) {
      Release();
    }
  }
  return SendOutput(session);
}

}  // namespace nodefl::fedwalk
