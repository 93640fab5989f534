// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// KcagcRemoteParticipants: the coordinator's participants over the network
// (kcagc_coordinator.h's interface, on the worker thread). Each call
// becomes the contract's instruction records (protocol/kcagc/job_format.h)
// for the participants concerned and, for a sum, a secure aggregation,
// handed to the job through the KcagcChannel; a sum comes back as the
// aggregation's sum mod 2^32 and is decoded with the code it was made in
// (secagg/fixed_point.h), exactly as the simulation's aggregator decodes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nodefl/server/jobs/kcagc_channel.h"
#include "nodefl/server/jobs/kcagc_coordinator.h"

namespace nodefl::server::jobs {

class KcagcRemoteParticipants final : public KcagcParticipants {
 public:
  // devices: the participants' device ids, in participant order (index l =
  // position); nodes: n, as they all reported it; columns: the sum of the
  // widths they reported.
  KcagcRemoteParticipants(KcagcChannel& channel, std::vector<uint32_t> devices, uint32_t nodes, uint64_t columns);

  uint32_t count() const override { return static_cast<uint32_t>(devices_.size()); }
  uint32_t nodes() const override { return nodes_; }
  uint64_t columns() const override { return columns_; }

  Result<std::vector<float>> SumRangeBounds(const nodefl::secagg::FixedPoint& range_code) override;
  Result<std::vector<nodefl::kcagc::Assignment>> LocalClusters(uint32_t local_clusters) override;
  Status BeginStage(const KcagcStageSetup& stage) override;
  Result<std::vector<float>> SumSeedDistances(uint32_t seed, const nodefl::secagg::FixedPoint& code) override;
  Status SeedCentres(std::span<const uint32_t> seeds) override;
  Result<std::vector<float>> SumLocalSeedDistances(uint32_t centres, uint64_t stream,
                                                   const nodefl::secagg::FixedPoint& code) override;
  Status UpdateCentres(const nodefl::kcagc::Assignment& assignment) override;
  Result<std::vector<float>> SumDistances(uint32_t centres, const nodefl::secagg::FixedPoint& code) override;
  Status EndStage(uint32_t kept_restart) override;
  Result<std::vector<float>> SumSpectralStep(uint32_t step, const nodefl::kcagc::Matrix& block,
                                             const nodefl::secagg::FixedPoint& code) override;
  Status Finish(const nodefl::kcagc::Assignment& clustering) override;

 private:
  // The current stage's devices (everyone outside a stage).
  std::vector<uint32_t> Members() const;
  // `records` go out before the contribution (the joint mode's block).
  Result<std::vector<float>> Sum(nodefl::kcagc::KcagcContribution what, uint32_t argument, uint64_t stream,
                                 uint32_t length, const nodefl::secagg::FixedPoint& code, bool everyone,
                                 std::vector<DeviceData> records = {});
  // Records of one array, then of one instruction with a 32-bit field, to each of `to`.
  static void AddArray(nodefl::kcagc::KcagcArray array, std::span<const uint32_t> values,
                       const std::vector<uint32_t>& to, std::vector<DeviceData>* out);
  static void AddWord(uint32_t kind, uint32_t value, const std::vector<uint32_t>& to, std::vector<DeviceData>* out);
  std::string Where() const;

  KcagcChannel& channel_;
  std::vector<uint32_t> devices_;
  uint32_t nodes_;
  uint64_t columns_;
  bool in_stage_ = false;
  KcagcStageSetup stage_;
  uint32_t points_ = 0;  // N of the current stage
};

}  // namespace nodefl::server::jobs
