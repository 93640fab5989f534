// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkHctRole: the device side of JOB_KIND_FEDWALK_HCT, FedWalk's
// hierarchical clustering tree constructor (FedWalk
// Sec. 4.2, Alg. 2 "Device operation 1/2"; contract in hct_format.h).
//
//   round 1 (kRoundBinning): JobStart carries the HctParameters; the server
//     streams the bin plan (kBinPlan). The device counts its neighbours per
//     bin, noises the counts (NoiseCounts: continuous Laplace in paper mode,
//     exact discrete Laplace in strict mode), records the release in its
//     ledger, uploads the noised vector (kDegreeVector) and reports.
//   round 2 (kRoundMatrix): the server streams the dictionary of every
//     vertex's noised vector (kDictionary). The device keeps its neighbours'
//     rows, then
//       paper:  uploads M_v (Eq. 5, kOrderedMatrix): its present neighbours'
//               rows in ascending estimated degree. NO privacy guarantee:
//               every row is a public dictionary entry, so the server can
//               match rows to vertices and recover the neighbour set (the
//               paper's known defect). Reported as unbounded, never as a
//               finite epsilon.
//       strict: uploads the noised histogram H_v (degree_features.h,
//               kDegreeHistogram), an epsilon_upload-DP release.
//   round 3 (kRoundPublish): the server streams the tree (kTree) and the
//     codebook (kCodebook). The device verifies both, keeps the tree if
//     HctStorage::tree holds it, keeps its neighbours' codebook rows and
//     its own (the walk needs it when a walk jumps to the device with the
//     2-hop predictor), and reports. The job is then finished().
//
// A device never asks for specific rows (that would reveal its edges): it
// receives every artefact whole and filters it as it streams by
// (neighbour_filters.h, tree_stream.h, codebook_stream.h).
//
// Degree bound. The device's capacity is HctStorage::neighbours.size(),
// sized by the app. If the device's real degree is larger, the app keeps
// the `capacity` neighbours that come first in the public order of
// privacy/neighbour_cap.h (NeighbourCap) and passes the real degree to
// Init(). The device never refuses because of its degree: a refusal would
// tell the server "degree > capacity", a bit without a DP bound. Instead,
// whenever a list of `capacity` neighbours could be cut at all (capacity <
// vertex_count - 1, public numbers), every release's sensitivity doubles
// (an added edge can bring one neighbour in and push one out), and the role
// records twice the nominal ε in its ledger and report.
//
// Budget. Every release goes through the ledger first (privacy/ledger.h):
// one past the device's budget, or paper mode's M_v (an exact release)
// unless the budget allows unbounded releases, is not made; the round is
// reported with kPermissionDenied.
//
// Rules of the conversation:
//   * A round's artefacts arrive on the job id with Envelope.round = that
//     round, after its JobStart. An artefact kind that does not belong to
//     the round, a size that does not match the parameters, a chunk in
//     another round or for another job, and anything protocol::ChunkReceiver
//     refuses (truncated or reordered transfers, digest mismatch) return an
//     error Status from OnMessage: the session closes the connection.
//     Malformed content inside a verified artefact (a bin >= bins, a bad
//     codebook entry, an inconsistent tree) is not a transport problem: the
//     round is reported with kDataLoss instead.
//   * JobStart.deadline_ms (0: none) starts the round's deadline at the next
//     OnPoll. If it passes before the round's result is computed, the round
//     is reported once with kDeadlineExceeded and its work stops (its
//     artefacts are still verified, then dropped).
//   * Results are computed once. A JobStart repeating the current round (the
//     server does so after a reconnect) restarts the round's downloads if
//     its result is not final; if it is, the same upload (the stored noised
//     values, never re-noised: a second draw would spend privacy again) and
//     report go out again, and re-sent artefacts are verified and dropped.
//   * After a reconnect (OnSessionRestart) transfers in flight are gone: the
//     download restarts when the server re-sends it, and a round output that
//     had started going out (upload and report) is sent again in full.
//   * The role never sends from OnMessage; uploads and reports go out from
//     OnPoll while the session can send.
//
// Reports carry privacy accounting (JobReport.releases/epsilon/unbounded).
// In strict mode JobReport.expected/received stay 0: they would tell the
// server the number of neighbours (the exact degree the noised vector
// protects). In paper mode, where M_v already revealed the neighbour set,
// round 3 reports expected = neighbours present in the dictionary and
// received = neighbours whose codebook row was kept.
//
// Memory: HctStorage (caller-provided; 96 bytes per neighbour on 64-bit
// hosts) plus about 2.5 KiB in the object, mostly the stored strict-mode
// histogram (1.5 KiB at the largest shape) and the download receiver. No
// heap; uploads are produced on the fly (streaming_upload.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/fedwalk/codebook_stream.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/neighbour_filters.h"
#include "nodefl/fedwalk/streaming_upload.h"
#include "nodefl/fedwalk/tree_stream.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"
#include "nodefl/protocol/chunk.h"

namespace nodefl::fedwalk {

class FedWalkHctRole final : public device::Role {
 public:
  // Local figures of the current job. They describe the device's graph
  // (e.g. its neighbour counts): for the app, never sent as such.
  struct Stats {
    uint32_t neighbours_binned = 0;   // round 1: neighbours with a bin in the plan
    uint32_t neighbours_present = 0;  // round 2: neighbours with a finite dictionary row
    uint32_t matrix_rows = 0;         // round 2, paper: rows of the uploaded M_v
    uint32_t codebook_rows_kept = 0;  // round 3
    size_t pool_used = 0;             // round 3: entries of codebook_pool in use (own row included)
    uint32_t uploads = 0;             // uploads started, re-sends included
    uint32_t reports = 0;             // JobReports sent, repeats included
    uint32_t failures = 0;            // rounds that ended with a non-OK outcome
  };

  // `storage`, `rng` and `ledger` must outlive the role. `rng` draws every
  // noise value; `ledger` records every release before it is published.
  FedWalkHctRole(uint32_t own_id, const HctStorage& storage, Drbg& rng, PrivacyLedger& ledger);

  // Checks the neighbour ids (sorted ascending, no duplicates, not own id):
  // kInvalidArgument otherwise. `actual_degree` is the device's real number
  // of neighbours; `neighbour_cap` the most neighbours the app keeps, a
  // public number (kNoNeighbourCap: the app keeps them all, however many).
  // Above the cap the neighbours given are the ones NeighbourCap kept (see
  // "Degree bound"). kInvalidArgument for an actual degree below the
  // neighbours given, a cap below them or a degree above the neighbours
  // given without a cap. Init() means actual_degree = neighbours.size(),
  // no cap; Init(d) with d above the neighbours given means the storage is
  // the cap.
  static constexpr uint32_t kNoNeighbourCap = UINT32_MAX;
  Status Init();
  Status Init(uint32_t actual_degree);
  Status Init(uint32_t actual_degree, uint32_t neighbour_cap);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  // The job is over for this device: round 3 reported.
  bool finished() const;
  uint32_t round() const { return round_; }
  uint64_t job_id() const { return job_id_; }
  // The neighbour list was cut to capacity (never told to the server).
  bool truncated() const { return actual_degree_ > storage_.neighbours.size(); }
  // 2 if the app's cap could cut a neighbour list of this job's graph, else
  // 1 (privacy/neighbour_cap.h); multiplies the ε of every release.
  uint32_t sensitivity_factor() const { return sensitivity_factor_; }
  // Paper mode's M_v went (or is going) out: a release with no DP guarantee.
  bool unbounded_release() const { return unbounded_; }
  const Stats& stats() const { return stats_; }
  const HctParameters& parameters() const { return params_; }

  // The releases as uploaded (empty until made): the noised degree vector
  // c_v (bins values) and, in strict mode, H_v (bins x buckets).
  Span<const float> degree_vector() const;
  Span<const int32_t> degree_histogram() const;

  // What the walk phase needs, valid once finished(): the neighbour records
  // (bins, dictionary rows, estimated degrees, codebook row locations), a
  // neighbour's codebook row (empty if none is kept), and the tree and bin
  // plan if they were kept (empty otherwise).
  Span<const HctNeighbour> neighbours() const { return storage_.neighbours; }
  Span<const CodebookEntry> CodebookRow(size_t neighbour_index) const;
  // The device's own codebook row (empty if none was kept: the device is
  // absent from the codebook, or the pool had no room for it).
  Span<const CodebookEntry> OwnCodebookRow() const;
  float OwnCodebookTruncatedMass() const;
  // The pool the rows live in (HctNeighbour::codebook_offset/count).
  Span<const CodebookEntry> codebook_pool() const { return storage_.codebook_pool; }
  ConstByteSpan tree() const;
  ConstByteSpan bin_plan() const;

 private:
  enum class Output : uint8_t { kNothing, kUploadHeader, kUploadChunks, kReport, kReported };
  struct Report {
    Status code;
    uint32_t releases = 0;
    double epsilon = 0.0;
    bool unbounded = false;
    uint32_t expected = 0;
    uint32_t received = 0;
  };

  Status OnJobStart(const nodefl_wire_Envelope& message);
  Status OnChunkHeader(const nodefl_wire_Envelope& message);
  Status OnChunk(const nodefl_wire_Envelope& message);
  bool SizeFits(HctArtefact kind, uint64_t total_bytes) const;
  void BeginDownload(HctArtefact kind, uint64_t total_bytes);
  void FinishDownload(HctArtefact kind);
  static Status Sink(void* context, uint64_t offset, ConstByteSpan data);

  void StartJob(uint64_t job_id, const HctParameters& params);
  void EnterRound(uint32_t round, uint32_t deadline_ms);
  Status RepeatRound(uint32_t deadline_ms);
  void Settle(Status outcome, uint32_t upload_kind, const Report& report);
  void ComputeRound();
  void ComputeBinning();
  void ComputeMatrix();
  void ComputePublish();
  void OrderPresentNeighbours(uint32_t present);

  Status SendOutput(device::DeviceSession& session);
  Status SendReport(device::DeviceSession& session);
  uint64_t UploadBytes() const;
  static void ProduceDegreeVector(void* context, uint64_t offset, ByteSpan out);
  static void ProduceHistogram(void* context, uint64_t offset, ByteSpan out);
  static void ProduceOrderedMatrix(void* context, uint64_t offset, ByteSpan out);

  const uint32_t own_id_;
  const HctStorage storage_;
  Drbg& rng_;
  PrivacyLedger& ledger_;
  uint32_t actual_degree_ = 0;
  uint32_t neighbour_cap_ = kNoNeighbourCap;
  bool initialised_ = false;

  // The job.
  bool in_job_ = false;
  uint64_t job_id_ = 0;
  HctParameters params_;
  uint32_t sensitivity_factor_ = 1;
  bool unbounded_ = false;

  // The current round.
  uint32_t round_ = 0;
  uint32_t downloads_done_ = 0;   // bit per HctArtefact completed in this round
  bool settled_ = false;          // the round's outcome is decided
  Status outcome_;
  bool deadline_pending_ = false;  // armed at the next OnPoll (OnMessage has no clock)
  uint32_t deadline_ms_ = 0;
  uint64_t deadline_us_ = 0;       // 0: none

  // Downloads: one transfer at a time, routed by kind to its filter.
  protocol::ChunkReceiver receiver_;
  uint32_t receiving_ = 0;  // HctArtefact of the transfer in progress, 0 if none
  bool discard_ = false;    // verify artefacts, keep nothing
  BinPlanFilter bin_plan_filter_;
  DictionaryFilter dictionary_filter_;
  TreeStream tree_stream_;
  CodebookStream codebook_stream_;
  Status bin_plan_outcome_;
  Status tree_outcome_;
  Status codebook_outcome_;
  bool bin_plan_kept_ = false;
  bool tree_kept_ = false;
  bool own_row_kept_ = false;
  uint64_t tree_bytes_ = 0;

  // Releases, kept for re-sends.
  float degree_vector_[kMaxBins] = {};
  bool has_degree_vector_ = false;
  int32_t histogram_[kMaxBins * kMaxBuckets] = {};
  bool has_histogram_ = false;

  // The current round's output.
  Output output_ = Output::kNothing;
  bool output_on_connection_ = false;  // began going out on the current connection
  uint32_t upload_kind_ = 0;           // HctArtefact, 0: the round uploads nothing
  StreamingChunkSender upload_;
  uint64_t upload_serial_ = 0;
  Report report_;

  Stats stats_;
};

}  // namespace nodefl::fedwalk
