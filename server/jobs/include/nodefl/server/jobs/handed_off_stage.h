// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// HandedOffStage: a finished stage of a job plan that is only its hand-off
// (Job::HandOff), e.g. what a restarted server kept of FedWalk's HCT job to
// make the walk job it continues (docs/reliability.md, "Server restarts").
// The next stage's factory reads the bytes as it reads a live job's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

class HandedOffStage final : public Job {
 public:
  explicit HandedOffStage(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_UNSPECIFIED; }
  std::vector<RoundStart> Begin(uint64_t) override { return {}; }
  std::vector<RoundStart> OnReport(uint32_t, uint32_t, const nodefl_wire_JobReport&, uint64_t) override { return {}; }
  std::vector<RoundStart> OnUpload(uint32_t, uint32_t, uint32_t, std::vector<uint8_t>, uint64_t) override {
    return {};
  }
  std::vector<RoundStart> Poll(uint64_t) override { return {}; }
  std::vector<uint8_t> HandOff() const override { return bytes_; }
  bool finished() const override { return true; }
  bool succeeded() const override { return true; }
  std::string ProgressLine() const override { return {}; }
  void LogSummary(Logger&, uint64_t) const override {}

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace nodefl::server::jobs
