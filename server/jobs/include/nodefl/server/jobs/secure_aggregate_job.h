// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// SecureAggregateJob: JOB_KIND_SECURE_AGGREGATE (contract:
// protocol/secagg/job_format.h), secure aggregation on its own over the
// real stack. Round 1 runs `aggregations` aggregations one after another
// through the AggregationService (server/secagg); the devices' inputs are
// public synthetic vectors, so every sum the service unmasks is checked
// against the sum recomputed from the included devices. Round 2 collects
// the devices' reports.
//
// Dropouts on demand: `drop_fraction` of the participants (a seeded draw,
// new per aggregation) are cut off at `drop_step` (keys: from the start;
// uploads: once the mask sets are out; reveals: once the reveal requests
// are out). The job stops passing their records to the service and marks
// them unreachable there, exactly as if their connections had died at
// that moment, while the devices themselves run on. This exercises the
// recovery over TLS without a fault injector in the emulator.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/protocol/secagg/job_format.h"
#include "nodefl/server/jobs/job.h"
#include "nodefl/server/secagg/aggregation_service.h"

namespace nodefl::server::jobs {

struct SecureAggregateOptions {
  uint64_t job_id = 0;
  nodefl::secagg::SecureAggregateParameters params;  // salt from the OS, input seed
  uint32_t aggregations = 1;
  secagg::AggregationRequest request;  // devices filled in by the job
  double drop_fraction = 0;
  secagg::AggregationStep drop_step = secagg::AggregationStep::kKeys;
  uint64_t drop_seed = 1;
  uint32_t report_deadline_ms = 60000;
};

class SecureAggregateJob final : public Job {
 public:
  struct AggregationSummary {
    uint32_t id = 0;
    bool done = false;
    bool verified = false;  // the unmasked sum equals the included devices' synthetic inputs
    uint32_t participants = 0;
    uint32_t included = 0;
    uint32_t dropped_by_job = 0;
    double mean_peers = 0;  // mask peers per participant
    std::string outcome;  // "done" or the abort reason and message
    double wall_ms = 0;
    double unmask_ms = 0;
    uint64_t scalar_multiplications = 0;
    double mean_device_bytes_up = 0;    // records a device sent the server
    double mean_device_bytes_down = 0;  // records the server sent a device
  };

  SecureAggregateJob(SecureAggregateOptions options, std::vector<uint32_t> participants);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  std::vector<DeviceData> TakeData() override;
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;

  bool finished() const override { return phase_ == Phase::kFinished; }
  bool succeeded() const override;
  std::string ProgressLine() const override;
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const std::vector<AggregationSummary>& summaries() const { return summaries_; }
  const secagg::AggregationService& service() const { return service_; }

 private:
  enum class Phase : uint8_t { kIdle, kAggregating, kReporting, kFinished };

  void StartAggregation(uint64_t now_us);
  void ApplyDrops(uint64_t now_us);
  std::vector<RoundStart> Advance(uint64_t now_us);
  void Settle(uint64_t now_us);
  std::vector<RoundStart> BeginReports(uint64_t now_us);

  SecureAggregateOptions options_;
  std::vector<uint32_t> participants_;
  secagg::AggregationService service_;
  Phase phase_ = Phase::kIdle;
  uint32_t current_ = 0;  // the service's id of the running aggregation
  std::set<uint32_t> to_drop_;
  std::set<uint32_t> dropped_;
  bool drops_applied_ = false;
  std::set<uint32_t> unreachable_;
  std::vector<AggregationSummary> summaries_;
  std::set<uint32_t> reported_;
  uint32_t clean_reports_ = 0;
  uint64_t reports_started_us_ = 0;
  uint64_t protocol_errors_ = 0;
};

}  // namespace nodefl::server::jobs
