// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The neighbour-echo coordinator (neighbour_echo_job.h) behind the generic
// Job interface: adds the round-1 parameters (a fresh job salt and the load
// knobs, sdk/roles/public/nodefl/echo/neighbour_echo.h) and the summary.
#pragma once

#include "nodefl/server/jobs/job.h"
#include "nodefl/server/jobs/neighbour_echo_job.h"

namespace nodefl::server::jobs {

class NeighbourEchoRunnerJob final : public Job {
 public:
  // `salt` is the 16-byte public job salt; the knobs follow it on the wire.
  NeighbourEchoRunnerJob(const NeighbourEchoJob::Options& options, std::vector<uint32_t> participants,
                         std::vector<uint8_t> salt, uint32_t messages_per_edge, uint32_t payload_bytes);

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO; }
  std::vector<RoundStart> Begin(uint64_t now_us) override;
  std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                   uint64_t now_us) override;
  std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact, std::vector<uint8_t> bytes,
                                   uint64_t now_us) override;
  std::vector<RoundStart> Poll(uint64_t now_us) override;
  // The device misses the running round now (it cannot be reached).
  void OnUndeliverable(uint32_t device, uint64_t now_us) override;
  // Peers-gone records for the round-2 devices still running.
  std::vector<DeviceData> TakeData() override;
  // A peers-gone record is advisory: a device between connections goes
  // without it (it waits for its deadline) rather than being taken for gone.
  void OnDataUndeliverable(const DeviceData& data, uint64_t now_us) override;
  bool finished() const override { return job_.finished(); }
  bool succeeded() const override { return job_.finished() && job_.summary().verified(); }
  std::string ProgressLine() const override { return job_.ProgressLine(); }
  void LogSummary(Logger& log, uint64_t job_id) const override;

  const NeighbourEchoJob& job() const { return job_; }

 private:
  std::vector<RoundStart> Convert(NeighbourEchoJob::StartRound start) const;

  NeighbourEchoJob job_;
  std::vector<uint8_t> parameters_;
  // A round an unreachable device's miss started, handed out at the next Poll.
  std::vector<RoundStart> pending_;
  uint64_t uploads_refused_ = 0;
  uint64_t gone_notices_undelivered_ = 0;
};

}  // namespace nodefl::server::jobs
