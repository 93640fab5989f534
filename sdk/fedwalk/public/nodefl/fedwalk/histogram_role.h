// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkHistogramRole: the device side of JOB_KIND_FEDWALK_HISTOGRAMS,
// strict FedWalk's cluster-histogram job (contract in histogram_format.h;
// docs/fedwalk.md). In every release round r = 1 .. releases:
//
//   JobStart carries the round's HistogramParameters (C, epsilon); the
//   server streams the partition (kPartition). The device keeps its
//   neighbours' clusters as the artefact streams by (partition_filter.h),
//   counts its neighbours per cluster, adds exact discrete Laplace noise
//   (cluster_histogram.h), records the release in its ledger, then uploads
//   the noised histogram (kClusterHistogram) and reports
//   JobReport{releases = 1, epsilon}.
//
// After the last round's report the device's part is over: the server
// generates the walks from the uploads itself. The device sends nothing to
// other devices and asks the server for nothing by name.
//
// Degree bound. The device's capacity is HistogramStorage::neighbours.size(),
// sized by the app. A device whose real degree is larger does not refuse
// (a refusal would tell the server "degree > capacity", a bit with no DP
// bound): the app keeps the neighbours privacy/neighbour_cap.h chooses in a
// public order and passes its cap to Init. Whenever a cap could cut some
// neighbour list of the job's graph (CapSensitivityFactor, public numbers
// only), one edge can move two cells (one neighbour in, one out), so the
// role noises at epsilon/2 and the release is still epsilon-DP. A round
// whose C exceeds HistogramStorage::cells.size() (public: C is in the
// parameters) is answered kResourceExhausted, without a release; so is a
// release the ledger's budget refuses (kPermissionDenied).
//
// Rules of the conversation (as in hct_role.h):
//   * A round's artefact arrives on the job id with Envelope.round = that
//     round, after its JobStart. The wrong artefact kind or size, a chunk
//     out of round or job, and anything protocol::ChunkReceiver refuses return
//     an error Status from OnMessage: the session closes the connection.
//     A verified partition with a bad entry is reported as kDataLoss.
//   * JobStart.deadline_ms (0: none) starts at the next OnPoll; if it
//     passes before the release is made, the round is reported once with
//     kDeadlineExceeded and nothing is released.
//   * Releases are made once. A JobStart repeating the current round (after
//     a reconnect) restarts the download if nothing was released; otherwise
//     the same stored histogram (never re-noised: a second draw would spend
//     privacy again) and report go out again.
//   * After a reconnect (OnSessionRestart) an upload that had started going
//     out is sent again in full.
//   * The role never sends from OnMessage; uploads and reports go out from
//     OnPoll while the session can send.
//
// Reports carry privacy accounting only (JobReport.releases/epsilon);
// JobReport.expected/received stay 0 (they would reveal the degree).
//
// Memory: HistogramStorage (8 bytes per neighbour, 4 per cluster cell) plus
// about 550 bytes in the object. No heap; the upload is produced on the fly
// from the stored cells (streaming_upload.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/fedwalk/cluster_histogram.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/fedwalk/partition_filter.h"
#include "nodefl/fedwalk/streaming_upload.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"
#include "nodefl/protocol/chunk.h"

namespace nodefl::fedwalk {

struct HistogramStorage {
  // The device's neighbours: ids sorted ascending, no duplicates, not the
  // device's own id. Its size is the device's capacity.
  Span<HistogramNeighbour> neighbours;
  // One cell per cluster: the largest C the device accepts.
  Span<int32_t> cells;
};

class FedWalkHistogramRole final : public device::Role {
 public:
  // Local figures (they describe the device's graph: for the app only).
  struct Stats {
    uint32_t neighbours_placed = 0;  // current round: neighbours with a cluster
    uint32_t releases = 0;           // histograms noised and recorded
    uint32_t uploads = 0;            // uploads started, re-sends included
    uint32_t reports = 0;            // JobReports sent, repeats included
    uint32_t failures = 0;           // rounds that ended with a non-OK outcome
  };

  // `storage`, `rng` and `ledger` must outlive the role. `rng` draws every
  // noise value; `ledger` records every release before it is uploaded.
  FedWalkHistogramRole(uint32_t own_id, const HistogramStorage& storage, Drbg& rng, PrivacyLedger& ledger);

  // Checks the neighbour ids (sorted ascending, no duplicates, not own id)
  // and that there is at least one cell: kInvalidArgument otherwise.
  // `actual_degree` is the real degree, `neighbour_cap` the most neighbours
  // the app keeps (public; kNoNeighbourCap: all of them). kInvalidArgument
  // for a degree below the neighbours given, a cap below them, or a degree
  // above them without a cap. Init() means actual_degree = neighbours
  // given, no cap; Init(d) with d above the neighbours given means the
  // storage is the cap.
  static constexpr uint32_t kNoNeighbourCap = UINT32_MAX;
  [[nodiscard]] Status Init();
  [[nodiscard]] Status Init(uint32_t actual_degree);
  [[nodiscard]] Status Init(uint32_t actual_degree, uint32_t neighbour_cap);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  // The job is over for this device: the last round reported, or a round
  // reported with an error (the server leaves such a device out).
  bool finished() const;
  uint64_t job_id() const { return job_id_; }
  uint32_t round() const { return round_; }
  // 2 if the app's cap could cut a neighbour list of this job's graph, else
  // 1: the noise is drawn for epsilon / factor (see "Degree bound").
  uint32_t sensitivity_factor() const { return sensitivity_factor_; }
  bool truncated() const { return actual_degree_ > storage_.neighbours.size(); }
  const Stats& stats() const { return stats_; }
  const HistogramParameters& parameters() const { return params_; }
  // The current round's release as uploaded (empty until made).
  Span<const int32_t> histogram() const;
  // Summed epsilon of this job's releases (what the ledger recorded).
  double job_epsilon() const { return job_epsilon_; }

 private:
  enum class Output : uint8_t { kNothing, kUploadHeader, kUploadChunks, kReport, kReported };

  Status OnJobStart(const nodefl_wire_Envelope& message);
  Status OnChunkHeader(const nodefl_wire_Envelope& message);
  Status OnChunk(const nodefl_wire_Envelope& message);
  static Status Sink(void* context, uint64_t offset, ConstByteSpan data);

  void StartJob(uint64_t job_id, const HistogramParameters& params);
  void EnterRound(const HistogramParameters& params, uint32_t deadline_ms);
  void RepeatRound(uint32_t deadline_ms);
  void Settle(Status outcome, bool upload, uint32_t releases, double epsilon);
  void Release();

  Status SendOutput(device::DeviceSession& session);
  Status SendReport(device::DeviceSession& session);
  static void ProduceHistogram(void* context, uint64_t offset, ByteSpan out);

  const uint32_t own_id_;
  const HistogramStorage storage_;
  Drbg& rng_;
  PrivacyLedger& ledger_;
  uint32_t actual_degree_ = 0;
  uint32_t neighbour_cap_ = kNoNeighbourCap;
  bool initialised_ = false;

  // The job.
  bool in_job_ = false;
  uint64_t job_id_ = 0;
  HistogramParameters params_;  // of the current round
  uint32_t sensitivity_factor_ = 1;
  double job_epsilon_ = 0.0;

  // The current round.
  uint32_t round_ = 0;
  bool partition_done_ = false;  // the round's artefact arrived whole
  Status partition_outcome_;
  bool settled_ = false;
  Status outcome_;
  bool deadline_pending_ = false;
  uint32_t deadline_ms_ = 0;
  uint64_t deadline_us_ = 0;  // 0: none
  bool has_release_ = false;

  // The download (one transfer at a time).
  protocol::ChunkReceiver receiver_;
  bool receiving_ = false;
  bool discard_ = false;  // verify, keep nothing
  PartitionFilter filter_;

  // The current round's output.
  Output output_ = Output::kNothing;
  bool output_on_connection_ = false;
  bool upload_ = false;  // the round uploads its histogram
  StreamingChunkSender sender_;
  uint64_t upload_serial_ = 0;
  uint32_t report_releases_ = 0;
  double report_epsilon_ = 0.0;

  Stats stats_;
};

}  // namespace nodefl::fedwalk
