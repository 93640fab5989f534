// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/hct_role.h"

#include <cstring>

#include "nodefl/fedwalk/degree_features.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/privacy/neighbour_cap.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::fedwalk {
namespace {

constexpr uint32_t Bit(HctArtefact kind) { return 1u << static_cast<uint32_t>(kind); }
constexpr uint32_t Bit(uint32_t kind) { return kind < 32 ? 1u << kind : 0; }

// The artefacts the server streams in each round.
uint32_t DownloadsOf(uint32_t round) {
  switch (round) {
    case kRoundBinning: return Bit(HctArtefact::kBinPlan);
    case kRoundMatrix: return Bit(HctArtefact::kDictionary);
    case kRoundPublish: return Bit(HctArtefact::kTree) | Bit(HctArtefact::kCodebook);
    default: return 0;
  }
}

bool SameParameters(const HctParameters& a, const HctParameters& b) {
  return a.mode == b.mode && a.bins == b.bins && a.buckets == b.buckets &&
         a.vertex_count == b.vertex_count && a.epsilon_bins == b.epsilon_bins &&
         a.epsilon_upload == b.epsilon_upload && a.epsilon_walk == b.epsilon_walk &&
         a.codebook_k == b.codebook_k;
}

// Upload transfer ids: a tag, the round and a per-role serial, so they are
// non-zero and never repeat within a connection.
constexpr uint64_t kTransferTag = uint64_t{0x4657} << 48;  // "FW"

// Fills out[i] with byte (offset + i) of the little-endian encoding of
// words[0], words[1], ...
template <typename WordAt>
void ProduceLeWords(uint64_t offset, ByteSpan out, WordAt word_at) {
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t p = offset + i;
    out[i] = static_cast<uint8_t>(word_at(static_cast<size_t>(p / 4)) >> (8 * (p % 4)));
  }
}

uint32_t FloatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

}  // namespace

FedWalkHctRole::FedWalkHctRole(uint32_t own_id, const HctStorage& storage, Drbg& rng,
                               PrivacyLedger& ledger)
    : own_id_(own_id), storage_(storage), rng_(rng), ledger_(ledger), receiver_(&Sink, this) {}

Status FedWalkHctRole::Init() { return Init(static_cast<uint32_t>(storage_.neighbours.size()), kNoNeighbourCap); }

Status FedWalkHctRole::Init(uint32_t actual_degree) {
  const uint32_t given = static_cast<uint32_t>(storage_.neighbours.size());
  return Init(actual_degree, actual_degree > given ? given : kNoNeighbourCap);
}

Status FedWalkHctRole::Init(uint32_t actual_degree, uint32_t neighbour_cap) {
  const Span<HctNeighbour> n = storage_.neighbours;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i].id == own_id_) return Status::InvalidArgument();
    if (i > 0 && n[i - 1].id >= n[i].id) return Status::InvalidArgument();
  }
  if (actual_degree < n.size() || neighbour_cap < n.size()) return Status::InvalidArgument();
  if (actual_degree > n.size() && neighbour_cap == kNoNeighbourCap) return Status::InvalidArgument();
  actual_degree_ = actual_degree;
  neighbour_cap_ = neighbour_cap;
  initialised_ = true;
  return Status::Ok();
}

bool FedWalkHctRole::finished() const {
  return in_job_ && settled_ && output_ == Output::kReported && round_ == kRoundPublish;
}

Span<const float> FedWalkHctRole::degree_vector() const {
  return Span<const float>(degree_vector_, has_degree_vector_ ? params_.bins : 0);
}

Span<const int32_t> FedWalkHctRole::degree_histogram() const {
  return Span<const int32_t>(histogram_, has_histogram_ ? size_t{params_.bins} * params_.buckets : 0);
}

Span<const CodebookEntry> FedWalkHctRole::CodebookRow(size_t neighbour_index) const {
  if (neighbour_index >= storage_.neighbours.size()) return {};
  const HctNeighbour& n = storage_.neighbours[neighbour_index];
  if (!n.has_codebook_row) return {};
  return Span<const CodebookEntry>(storage_.codebook_pool).subspan(n.codebook_offset, n.codebook_count);
}

Span<const CodebookEntry> FedWalkHctRole::OwnCodebookRow() const {
  return own_row_kept_ ? codebook_stream_.own_row() : Span<const CodebookEntry>();
}

float FedWalkHctRole::OwnCodebookTruncatedMass() const {
  return own_row_kept_ ? codebook_stream_.own_truncated_mass() : 0.0f;
}

ConstByteSpan FedWalkHctRole::tree() const {
  return tree_kept_ ? ConstByteSpan(storage_.tree.data(), static_cast<size_t>(tree_bytes_)) : ConstByteSpan();
}

ConstByteSpan FedWalkHctRole::bin_plan() const {
  return bin_plan_kept_ ? ConstByteSpan(storage_.bin_plan.data(), params_.vertex_count) : ConstByteSpan();
}

// ---- Job and round state ----------------------------------------------------------

void FedWalkHctRole::StartJob(uint64_t job_id, const HctParameters& params) {
  in_job_ = true;
  job_id_ = job_id;
  params_ = params;
  sensitivity_factor_ =
      neighbour_cap_ == kNoNeighbourCap ? 1u : CapSensitivityFactor(neighbour_cap_, params.vertex_count);
  ledger_.BeginJob(job_id);
  unbounded_ = false;
  has_degree_vector_ = false;
  has_histogram_ = false;
  bin_plan_kept_ = false;
  tree_kept_ = false;
  own_row_kept_ = false;
  stats_ = Stats{};
  for (HctNeighbour& n : storage_.neighbours) {
    const uint32_t id = n.id;
    n = HctNeighbour{};
    n.id = id;
  }
  round_ = 0;
}

void FedWalkHctRole::EnterRound(uint32_t round, uint32_t deadline_ms) {
  round_ = round;
  receiver_.Reset();
  receiving_ = 0;
  downloads_done_ = 0;
  settled_ = false;
  outcome_ = Status::Ok();
  deadline_pending_ = true;
  deadline_ms_ = deadline_ms;
  deadline_us_ = 0;
  discard_ = false;
  output_ = Output::kNothing;
  output_on_connection_ = false;
  upload_kind_ = 0;
}

Status FedWalkHctRole::RepeatRound(uint32_t deadline_ms) {
  const bool final = settled_ && outcome_.ok();
  if (!final) {
    // Nothing was released in this round: start it over.
    EnterRound(round_, deadline_ms);
    return Status::Ok();
  }
  // The result stands. Re-sent artefacts are only verified; the stored
  // output goes out again, unless it is already going out (or went out) on
  // this connection, in which case only the report is repeated.
  receiver_.Reset();
  receiving_ = 0;
  discard_ = true;
  if (output_on_connection_) {
    if (output_ == Output::kReported) output_ = Output::kReport;
  } else {
    output_ = upload_kind_ != 0 ? Output::kUploadHeader : Output::kReport;
  }
  return Status::Ok();
}

void FedWalkHctRole::Settle(Status outcome, uint32_t upload_kind, const Report& report) {
  settled_ = true;
  outcome_ = outcome;
  // A transfer still in flight (e.g. when the deadline passed) keeps being
  // verified, so the connection stays in step with the server; its data is
  // dropped.
  discard_ = true;
  report_ = report;
  report_.code = outcome;
  upload_kind_ = outcome.ok() ? upload_kind : 0;
  output_ = upload_kind_ != 0 ? Output::kUploadHeader : Output::kReport;
  if (!outcome.ok()) ++stats_.failures;
}

void FedWalkHctRole::OnSessionRestart(bool /*resumed*/) {
  // Transfers in flight died with the connection. A download restarts when
  // the server re-sends it; the round output that had started going out
  // (upload, report) may be lost anywhere, so all of it goes out again.
  receiver_.Reset();
  receiving_ = 0;
  output_on_connection_ = false;
  if (!in_job_ || !settled_) return;
  if (output_ == Output::kUploadChunks || output_ == Output::kReport || output_ == Output::kReported) {
    output_ = upload_kind_ != 0 ? Output::kUploadHeader : Output::kReport;
  }
}

// ---- Incoming messages ------------------------------------------------------------

Status FedWalkHctRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  if (!initialised_) return Status::FailedPrecondition();
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag: return OnJobStart(message);
    case nodefl_wire_Envelope_chunk_header_tag: return OnChunkHeader(message);
    case nodefl_wire_Envelope_chunk_tag: return OnChunk(message);
    default: return Status::Unimplemented();
  }
}

Status FedWalkHctRole::OnJobStart(const nodefl_wire_Envelope& message) {
  const uint32_t round = message.round;
  const uint32_t deadline_ms = message.body.job_start.deadline_ms;
  if (round == kRoundBinning) {
    NODEFL_TRY_ASSIGN(const HctParameters params,
                      DecodeHctParameters(protocol::BytesOf(message.body.job_start.parameters)));
    if (in_job_ && message.job_id == job_id_) {
      // The same job again: its parameters cannot change, and it cannot go
      // back to round 1 once past it.
      if (!SameParameters(params, params_)) return Status::InvalidArgument();
      if (round_ != kRoundBinning) return Status::FailedPrecondition();
      return RepeatRound(deadline_ms);
    }
    StartJob(message.job_id, params);
    EnterRound(kRoundBinning, deadline_ms);
    return Status::Ok();
  }
  if (round != kRoundMatrix && round != kRoundPublish) return Status::InvalidArgument();
  // Later rounds carry no parameters: they continue the job round 1 set up.
  if (!in_job_ || message.job_id != job_id_ || round < round_) return Status::FailedPrecondition();
  if (round == round_) return RepeatRound(deadline_ms);
  // Moving on (the server may skip a round this device did not finish).
  EnterRound(round, deadline_ms);
  return Status::Ok();
}

bool FedWalkHctRole::SizeFits(HctArtefact kind, uint64_t total_bytes) const {
  const uint64_t n = params_.vertex_count;
  switch (kind) {
    case HctArtefact::kBinPlan:
      return total_bytes == n;
    case HctArtefact::kDictionary:
      return total_bytes == n * params_.bins * 4;
    case HctArtefact::kTree:
      return total_bytes >= TreeArtefactBytes(0) && total_bytes <= TreeArtefactBytes(n);
    case HctArtefact::kCodebook: {
      const uint64_t least = kCodebookHeaderBytes + n * kCodebookRowHeaderBytes;
      return total_bytes >= least && total_bytes <= least + n * kMaxCodebookK * kCodebookEntryBytes;
    }
    default:
      return false;
  }
}

void FedWalkHctRole::BeginDownload(HctArtefact kind, uint64_t total_bytes) {
  switch (kind) {
    case HctArtefact::kBinPlan:
      bin_plan_kept_ = false;
      bin_plan_filter_.Begin(storage_.neighbours, params_.bins, params_.vertex_count, storage_.bin_plan);
      return;
    case HctArtefact::kDictionary:
      dictionary_filter_.Begin(storage_.neighbours, params_.bins, params_.vertex_count);
      return;
    case HctArtefact::kTree:
      tree_kept_ = false;
      tree_bytes_ = total_bytes;
      tree_stream_.Begin(total_bytes, params_.vertex_count, storage_.tree);
      return;
    case HctArtefact::kCodebook:
      own_row_kept_ = false;
      codebook_stream_.Begin(storage_.neighbours, storage_.codebook_pool, params_.vertex_count, own_id_);
      return;
    default:
      return;
  }
}

void FedWalkHctRole::FinishDownload(HctArtefact kind) {
  switch (kind) {
    case HctArtefact::kBinPlan:
      bin_plan_outcome_ = bin_plan_filter_.Finish();
      bin_plan_kept_ = bin_plan_filter_.kept();
      stats_.neighbours_binned = bin_plan_filter_.neighbours_binned();
      return;
    case HctArtefact::kDictionary:
      stats_.neighbours_present = dictionary_filter_.Finish();
      return;
    case HctArtefact::kTree:
      tree_outcome_ = tree_stream_.Finish();
      tree_kept_ = tree_stream_.kept();
      return;
    case HctArtefact::kCodebook:
      codebook_outcome_ = codebook_stream_.Finish();
      stats_.codebook_rows_kept = codebook_stream_.rows_kept();
      own_row_kept_ = !codebook_stream_.own_row().empty();
      stats_.pool_used = codebook_stream_.pool_used();
      return;
    default:
      return;
  }
}

Status FedWalkHctRole::Sink(void* context, uint64_t offset, ConstByteSpan data) {
  auto* self = static_cast<FedWalkHctRole*>(context);
  if (self->discard_) return Status::Ok();
  switch (static_cast<HctArtefact>(self->receiving_)) {
    case HctArtefact::kBinPlan: self->bin_plan_filter_.Feed(offset, data); break;
    case HctArtefact::kDictionary: self->dictionary_filter_.Feed(offset, data); break;
    case HctArtefact::kTree: self->tree_stream_.Feed(offset, data); break;
    case HctArtefact::kCodebook: self->codebook_stream_.Feed(offset, data); break;
    default: break;
  }
  return Status::Ok();
}

Status FedWalkHctRole::OnChunkHeader(const nodefl_wire_Envelope& message) {
  if (!in_job_ || message.job_id != job_id_ || message.round != round_) {
    return Status::FailedPrecondition();
  }
  const nodefl_wire_ChunkHeader& header = message.body.chunk_header;
  if ((DownloadsOf(round_) & Bit(header.artefact)) == 0) return Status::InvalidArgument();
  const auto kind = static_cast<HctArtefact>(header.artefact);
  if (!SizeFits(kind, header.total_bytes)) return Status::InvalidArgument();
  NODEFL_TRY(receiver_.OnHeader(header));
  receiving_ = header.artefact;
  // A re-sent artefact replaces what an earlier copy delivered.
  downloads_done_ &= ~Bit(kind);
  if (!discard_) BeginDownload(kind, header.total_bytes);
  return Status::Ok();
}

Status FedWalkHctRole::OnChunk(const nodefl_wire_Envelope& message) {
  if (!in_job_ || message.job_id != job_id_ || message.round != round_) {
    return Status::FailedPrecondition();
  }
  // With no transfer announced the receiver refuses the chunk itself.
  NODEFL_TRY(receiver_.OnChunk(message.body.chunk));
  if (receiver_.complete()) {
    const auto kind = static_cast<HctArtefact>(receiving_);
    downloads_done_ |= Bit(kind);
    receiving_ = 0;
    if (!discard_) FinishDownload(kind);
  }
  return Status::Ok();
}

// ---- Computing a round's result ----------------------------------------------------

void FedWalkHctRole::ComputeRound() {
  switch (round_) {
    case kRoundBinning: ComputeBinning(); return;
    case kRoundMatrix: ComputeMatrix(); return;
    case kRoundPublish: ComputePublish(); return;
    default: return;
  }
}

void FedWalkHctRole::ComputeBinning() {
  Report r;
  if (!bin_plan_outcome_.ok()) {
    Settle(bin_plan_outcome_, 0, r);
    return;
  }
  const uint32_t bins = params_.bins;
  uint32_t counts[kMaxBins] = {};
  for (const HctNeighbour& n : storage_.neighbours) {
    // The filter already mapped invalid bins to absent; this cannot fail.
    AddNeighbourToBinCounts(n.bin, Span<uint32_t>(counts, bins)).IgnoreError();
  }
  double noised[kMaxBins] = {};
  double spent = 0.0;
  // Asked first (with the nominal ε), so that a refused release draws no noise.
  const Mechanism mechanism =
      params_.mode == PrivacyMode::kPaper ? Mechanism::kLaplace : Mechanism::kDiscreteLaplace;
  Status s = ledger_.CanRecord(kPhaseBinning, mechanism, params_.mode,
                               ReleaseCost{sensitivity_factor_ * params_.epsilon_bins});
  if (s.ok()) {
    s = NoiseCounts(rng_, params_.mode, params_.epsilon_bins, Span<const uint32_t>(counts, bins),
                    Span<double>(noised, bins), &spent);
  }
  // With a capped neighbour list the sensitivity doubles (neighbour_cap.h).
  spent *= sensitivity_factor_;
  // Accounted before published: a release the ledger cannot hold is not made.
  if (s.ok()) s = ledger_.Record(kPhaseBinning, mechanism, params_.mode, spent);
  if (!s.ok()) {
    Settle(s, 0, r);
    return;
  }
  // Rounding a released value to f32 is post-processing.
  for (uint32_t i = 0; i < bins; ++i) degree_vector_[i] = static_cast<float>(noised[i]);
  has_degree_vector_ = true;
  r.releases = 1;
  r.epsilon = spent;
  Settle(Status::Ok(), static_cast<uint32_t>(HctArtefact::kDegreeVector), r);
}

void FedWalkHctRole::OrderPresentNeighbours(uint32_t present) {
  Span<HctNeighbour> n = storage_.neighbours;
  uint32_t m = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i].in_dictionary) n[m++].order_slot = static_cast<uint32_t>(i);
  }
  NODEFL_CHECK(m == present);
  auto key = [&n](size_t slot) {
    const HctNeighbour& u = n[n[slot].order_slot];
    return DegreeKey{u.estimated_degree, u.id};
  };
  HeapSortPositions(
      m, [&key](size_t a, size_t b) { return DegreeKeyLess(key(a), key(b)); },
      [&n](size_t a, size_t b) {
        const uint32_t t = n[a].order_slot;
        n[a].order_slot = n[b].order_slot;
        n[b].order_slot = t;
      });
}

void FedWalkHctRole::ComputeMatrix() {
  Report r;
  const uint32_t present = stats_.neighbours_present;
  if (params_.mode == PrivacyMode::kPaper) {
    OrderPresentNeighbours(present);
    stats_.matrix_rows = present;
    // M_v consists of public dictionary rows: the server can match each row
    // to its vertex and so learns the neighbour set exactly. No epsilon
    // bounds that: the ledger records an exact release, which the device's
    // budget must allow (paper-mode experiments do).
    ReleaseCost exact;
    exact.unbounded = true;
    const Status allowed = ledger_.Record(kPhaseMatrix, Mechanism::kExact, PrivacyMode::kPaper, exact);
    if (!allowed.ok()) {
      Settle(allowed, 0, r);
      return;
    }
    unbounded_ = true;
    r.releases = 1;
    r.epsilon = 0.0;
    r.unbounded = true;
    Settle(Status::Ok(), static_cast<uint32_t>(HctArtefact::kOrderedMatrix), r);
    return;
  }
  const uint32_t bins = params_.bins;
  const uint32_t buckets = params_.buckets;
  const Span<int32_t> cells(histogram_, size_t{bins} * buckets);
  for (int32_t& c : cells) c = 0;
  Status s = Status::Ok();
  for (const HctNeighbour& n : storage_.neighbours) {
    if (!n.in_dictionary || !s.ok()) continue;
    s = AddRowToDegreeHistogram(ConstByteSpan(n.row_bytes, size_t{bins} * 4), bins, buckets, cells);
  }
  double spent = 0.0;
  if (s.ok()) {
    s = ledger_.CanRecord(kPhaseMatrix, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict,
                          ReleaseCost{sensitivity_factor_ * params_.epsilon_upload});
  }
  if (s.ok()) s = NoiseHistogram(rng_, params_.epsilon_upload, bins, cells, &spent);
  spent *= sensitivity_factor_;
  if (s.ok()) s = ledger_.Record(kPhaseMatrix, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, spent);
  if (!s.ok()) {
    for (int32_t& c : cells) c = 0;
    Settle(s, 0, r);
    return;
  }
  has_histogram_ = true;
  r.releases = 1;
  r.epsilon = spent;
  Settle(Status::Ok(), static_cast<uint32_t>(HctArtefact::kDegreeHistogram), r);
}

void FedWalkHctRole::ComputePublish() {
  Report r;
  const Status outcome = !tree_outcome_.ok() ? tree_outcome_ : codebook_outcome_;
  // Counts go out only once M_v has revealed the neighbour set (paper
  // mode); in strict mode they would disclose the exact degree.
  if (unbounded_) {
    r.expected = stats_.neighbours_present;
    r.received = stats_.codebook_rows_kept;
  }
  Settle(outcome, 0, r);
}

// ---- Outgoing messages --------------------------------------------------------------

uint64_t FedWalkHctRole::UploadBytes() const {
  switch (static_cast<HctArtefact>(upload_kind_)) {
    case HctArtefact::kDegreeVector: return uint64_t{params_.bins} * 4;
    case HctArtefact::kDegreeHistogram: return uint64_t{params_.bins} * params_.buckets * 4;
    case HctArtefact::kOrderedMatrix: return 4 + uint64_t{stats_.matrix_rows} * params_.bins * 4;
    default: return 0;
  }
}

void FedWalkHctRole::ProduceDegreeVector(void* context, uint64_t offset, ByteSpan out) {
  const auto* self = static_cast<const FedWalkHctRole*>(context);
  ProduceLeWords(offset, out, [self](size_t i) { return FloatBits(self->degree_vector_[i]); });
}

void FedWalkHctRole::ProduceHistogram(void* context, uint64_t offset, ByteSpan out) {
  const auto* self = static_cast<const FedWalkHctRole*>(context);
  ProduceLeWords(offset, out, [self](size_t i) { return static_cast<uint32_t>(self->histogram_[i]); });
}

// u32 m, then row r = the dictionary row of the r-th neighbour in Eq. 5
// order, exactly as received: regenerated for each byte range, so the
// matrix never exists in memory.
void FedWalkHctRole::ProduceOrderedMatrix(void* context, uint64_t offset, ByteSpan out) {
  const auto* self = static_cast<const FedWalkHctRole*>(context);
  const Span<HctNeighbour> n = self->storage_.neighbours;
  const uint64_t row_bytes = uint64_t{self->params_.bins} * 4;
  const uint32_t m = self->stats_.matrix_rows;
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t p = offset + i;
    if (p < 4) {
      out[i] = static_cast<uint8_t>(m >> (8 * p));
      continue;
    }
    const uint64_t row = (p - 4) / row_bytes;
    const uint64_t col = (p - 4) % row_bytes;
    out[i] = n[n[static_cast<size_t>(row)].order_slot].row_bytes[col];
  }
}

Status FedWalkHctRole::SendReport(device::DeviceSession& session) {
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round_);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT;
  r.code = static_cast<uint32_t>(report_.code.code());
  r.releases = report_.releases;
  r.epsilon = report_.epsilon;
  r.unbounded = report_.unbounded;
  r.expected = report_.expected;
  r.received = report_.received;
  NODEFL_TRY(session.Send(m));
  ++stats_.reports;
  return Status::Ok();
}

Status FedWalkHctRole::SendOutput(device::DeviceSession& session) {
  while (session.CanSend()) {
    switch (output_) {
      case Output::kNothing:
      case Output::kReported:
        return Status::Ok();
      case Output::kUploadHeader: {
        StreamingChunkSender::Producer producer = &ProduceDegreeVector;
        if (upload_kind_ == static_cast<uint32_t>(HctArtefact::kDegreeHistogram)) producer = &ProduceHistogram;
        if (upload_kind_ == static_cast<uint32_t>(HctArtefact::kOrderedMatrix)) producer = &ProduceOrderedMatrix;
        const uint64_t transfer_id = kTransferTag | uint64_t{round_} << 40 | ++upload_serial_;
        upload_ = StreamingChunkSender(UploadBytes(), producer, this, transfer_id, upload_kind_);
        nodefl_wire_Envelope& m =
            session.NewMessage(nodefl_wire_Envelope_chunk_header_tag, job_id_, round_);
        // The envelope's chunk buffer is free while a header is built: hash
        // through it rather than through a second 4 KiB buffer.
        NODEFL_TRY(upload_.MakeHeader(&m.body.chunk_header, ByteSpan(m.body.chunk.data.bytes)));
        NODEFL_TRY(session.Send(m));
        output_on_connection_ = true;
        output_ = Output::kUploadChunks;
        ++stats_.uploads;
        break;
      }
      case Output::kUploadChunks: {
        nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_chunk_tag, job_id_, round_);
        NODEFL_TRY_ASSIGN(const bool more, upload_.NextChunk(&m.body.chunk));
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

Status FedWalkHctRole::OnPoll(uint64_t now_us, device::DeviceSession& session) {
  if (!in_job_) return Status::Ok();
  if (deadline_pending_) {
    deadline_pending_ = false;
    deadline_us_ = deadline_ms_ == 0 ? 0 : now_us + uint64_t{deadline_ms_} * 1000;
  }
  if (!settled_) {
    if (deadline_us_ != 0 && now_us > deadline_us_) {
      Settle(Status::DeadlineExceeded(), 0, Report{});
    } else if (round_ != 0 && downloads_done_ == DownloadsOf(round_)) {
      ComputeRound();
    }
  }
  return SendOutput(session);
}

}  // namespace nodefl::fedwalk
