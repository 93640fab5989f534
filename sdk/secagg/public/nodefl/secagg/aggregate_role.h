// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SecureAggregateRole: the device side of JOB_KIND_SECURE_AGGREGATE
// (protocol/secagg/job_format.h): an AggregationLink (aggregation_link.h)
// and the job's frame around it.
//   - JobStart round 1: a fresh job key (roles/job_key_announcer.h), then
//     the aggregations the server runs, one after another, through the link;
//   - the input comes from an InputFunction (this job: SyntheticInput);
//   - JobStart round 2: report and finish.
//
// Memory: the link's (AggregationLinkMemory), caller-provided. No heap in
// this code.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/secagg/job_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/roles/job_key_announcer.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/secagg/aggregation_link.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::secagg {

// The role's memory is the link's.
using SecureAggregateMemory = AggregationLinkMemory;

class SecureAggregateRole final : public device::Role {
 public:
  SecureAggregateRole(uint32_t own_id, const SecureAggregateMemory& memory, const tls::TlsCredentials& credentials,
                      Drbg& random);

  // The input of each aggregation; without one the role uses the job's
  // SyntheticInput.
  void SetInputFunction(InputFunction fn, void* context);
  // See seal/pair_key_source.h (hosts of many emulated devices only).
  void SetPairKeySource(const seal::PairKeySource& source) { link_.SetPairKeySource(source); }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  const AggregationLink::Stats& stats() const { return link_.stats(); }
  const AggregationClient& client() const { return link_.client(); }

 private:
  enum class Phase : uint8_t { kIdle, kRunning, kReporting, kDone };

  Status StartJob(const nodefl_wire_Envelope& message);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);
  static Status FillSynthetic(void* context, const AggStart& start, Span<uint32_t> out);

  uint32_t own_id_;
  Drbg& random_;
  AggregationLink link_;
  roles::JobKeyAnnouncer job_key_;
  roles::ReportRepeater report_;
  bool custom_input_ = false;
  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  SecureAggregateParameters params_;
};

}  // namespace nodefl::secagg
