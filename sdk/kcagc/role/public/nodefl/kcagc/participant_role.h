// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ParticipantRole: a kCAGC participant P_l in JOB_KIND_KCAGC (contract:
// protocol/kcagc/job_format.h; server: server/jobs kcagc_job.h). It holds
// the whole graph and its own feature columns (ParticipantData, given at
// construction), answers the server's instructions by computing with
// sdk/kcagc (ParticipantEngine), and adds its vectors to the server's sums
// through secure aggregation (AggregationLink: the full mask graph among
// the L participants; robust mode by default, or the paper's Protocol 4).
// What leaves it: its job key, its masked vectors and shares (the
// aggregation), its local clustering (Protocol 3 line 2) and its refusals.
// In the joint mode (not the paper's) it answers each spectral step with
// X^l ((X^l)^T Q_t) through the aggregation, as it answers distances.
//
// It refuses (kKcagcRefuse, then waits for the end) an instruction it
// cannot follow: parameters or a welcome that do not match its data, an
// instruction out of order, arrays that are incomplete or out of range,
// features too large for the range code. The server then aborts the run.
//
// Hosted: it uses the heap (an organisation's machine, not a device).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/kcagc/aggregation_link.h"
#include "nodefl/kcagc/participant_data.h"
#include "nodefl/kcagc/participant_engine.h"
#include "nodefl/protocol/kcagc/job_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::kcagc {

class ParticipantRole final : public device::Role {
 public:
  struct Stats {
    uint32_t instructions = 0;   // instructions followed
    uint32_t contributions = 0;  // vectors offered to a secure sum
    uint64_t scalars = 0;        // values in them
    uint64_t clipped = 0;        // values the fixed-point code clipped (0 under the range rule)
    uint64_t bytes_uploaded = 0; // kKcagc* uploads (the aggregation's are the link's)
    uint32_t spectral_steps = 0; // the joint mode: blocks Q_t taken
  };

  // `data` and `credentials` must outlive the role; `random` draws the job
  // key and everything the aggregation client draws.
  ParticipantRole(uint32_t own_id, const ParticipantData& data, const tls::TlsCredentials& credentials, Drbg& random);

  void SetPairKeySource(const seal::PairKeySource& source) { link_.SetPairKeySource(source); }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_KCAGC; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  // Reported (round 2).
  bool finished() const { return phase_ == Phase::kDone; }
  // The final clustering arrived (kKcagcDone).
  bool clustered() const { return clustered_; }
  const Assignment& clustering() const { return clustering_; }
  // Why this participant stopped following the run: its own refusal, or
  // the server's abort (OK while all is well).
  Status failure() const { return failure_; }
  const Stats& stats() const { return stats_; }
  const AggregationLink& link() const { return link_; }

 private:
  enum class Phase : uint8_t { kIdle, kRunning, kReporting, kDone };
  struct ArrayBuffer {
    std::vector<uint32_t> values;
    uint32_t received = 0;
    bool complete() const { return received == values.size(); }
  };

  Status StartJob(const nodefl_wire_Envelope& message);
  void OnInstruction(uint32_t kind, ConstByteSpan data);
  Status Follow(uint32_t kind, ConstByteSpan data);
  Status OnWelcome(ConstByteSpan data);
  Status OnArray(ConstByteSpan data);
  Status OnContribute(ConstByteSpan data);
  Status OnLocalCluster(ConstByteSpan data);
  Status OnStage(ConstByteSpan data);
  Status OnSeedCentres(ConstByteSpan data);
  Status OnUpdateCentres(ConstByteSpan data);
  Status OnEndStage(ConstByteSpan data);
  Status OnDone(ConstByteSpan data);
  Status OnSpectralStep(ConstByteSpan data);
  // The whole of array `a`, `expected` values long.
  Result<const std::vector<uint32_t>*> Whole(KcagcArray a, size_t expected) const;
  Result<Assignment> AssignmentOf(size_t points, uint32_t clusters) const;
  void Upload(uint32_t kind, std::vector<uint8_t> bytes);
  void UploadArray(KcagcArray array, const std::vector<uint32_t>& values);
  void Refuse(Status why, uint32_t kind);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);

  uint32_t own_id_;
  const ParticipantData& data_;
  Drbg& random_;
  AggregationLink link_;
  roles::JobKeyAnnouncer job_key_;
  roles::ReportRepeater report_;
  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  KcagcParameters params_;
  bool welcomed_ = false;
  std::unique_ptr<ParticipantEngine> engine_;
  ArrayBuffer arrays_[8];  // by KcagcArray value
  std::deque<std::pair<uint32_t, std::vector<uint8_t>>> outbox_;
  bool clustered_ = false;
  Assignment clustering_;
  Status failure_;
  bool refused_ = false;
  Stats stats_;
};

}  // namespace nodefl::kcagc
