// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_remote_participants.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nodefl::server::jobs {
namespace {

namespace kw = nodefl::kcagc;

DeviceData Record(uint32_t device, uint32_t kind, std::vector<uint8_t> bytes) {
  DeviceData d;
  d.device = device;
  d.round = 1;
  d.kind = kind;
  d.bytes = std::move(bytes);
  return d;
}

std::vector<uint32_t> AsWords(const kw::Assignment& a) { return std::vector<uint32_t>(a.begin(), a.end()); }

}  // namespace

KcagcRemoteParticipants::KcagcRemoteParticipants(KcagcChannel& channel, std::vector<uint32_t> devices,
                                                 uint32_t nodes, uint64_t columns)
    : channel_(channel), devices_(std::move(devices)), nodes_(nodes), columns_(columns) {}

std::vector<uint32_t> KcagcRemoteParticipants::Members() const {
  if (!in_stage_) return devices_;
  return std::vector<uint32_t>(devices_.begin() + stage_.first, devices_.begin() + stage_.first + stage_.count);
}

std::string KcagcRemoteParticipants::Where() const {
  if (!in_stage_) return "";
  if (stage_.groups == nullptr) return " (the stage over the nodes)";
  // Tree node 0 is a leaf, so it names no tree stage: the one stage of kCAGC.
  const std::string points = std::to_string(points_) + " virtual nodes";
  return stage_.tree_node == 0 ? " (the stage over " + points + ")"
                               : " (tree node " + std::to_string(stage_.tree_node) + ", " + points + ")";
}

void KcagcRemoteParticipants::AddArray(kw::KcagcArray array, std::span<const uint32_t> values,
                                       const std::vector<uint32_t>& to, std::vector<DeviceData>* out) {
  const auto total = static_cast<uint32_t>(values.size());
  for (uint32_t offset = 0; offset < total; offset += kw::kKcagcValuesPerRecord) {
    const uint32_t count = std::min(kw::kKcagcValuesPerRecord, total - offset);
    std::vector<uint8_t> bytes(kw::kKcagcArrayHeaderBytes + 4 * size_t{count});
    // Cannot fail: the record is sized for the run.
    kw::EncodeKcagcArrayRun(array, total, offset, Span<const uint32_t>(values.data() + offset, count),
                            ByteSpan(bytes.data(), bytes.size()))
        .IgnoreError();
    for (uint32_t device : to) out->push_back(Record(device, kw::kKcagcArray, bytes));
  }
}

void KcagcRemoteParticipants::AddWord(uint32_t kind, uint32_t value, const std::vector<uint32_t>& to,
                                      std::vector<DeviceData>* out) {
  uint8_t word[kw::kKcagcWordBytes];
  kw::EncodeKcagcWord(value, word);
  for (uint32_t device : to) out->push_back(Record(device, kind, std::vector<uint8_t>(word, word + sizeof word)));
}

Result<std::vector<float>> KcagcRemoteParticipants::Sum(kw::KcagcContribution what, uint32_t argument,
                                                        uint64_t stream, uint32_t length,
                                                        const nodefl::secagg::FixedPoint& code, bool everyone,
                                                        std::vector<DeviceData> records) {
  KcagcRequest r;
  r.records = std::move(records);
  switch (what) {
    case kw::KcagcContribution::kRangeBound: r.what = "the range round"; break;
    case kw::KcagcContribution::kSeedDistances: r.what = "distances to seed point " + std::to_string(argument); break;
    case kw::KcagcContribution::kLocalSeeding: r.what = "distances to local seeds"; break;
    case kw::KcagcContribution::kDistances: r.what = "distances to " + std::to_string(argument) + " centres"; break;
    case kw::KcagcContribution::kSpectralProduct: r.what = "the joint space's step " + std::to_string(argument); break;
  }
  r.what += Where();
  r.aggregate = true;
  r.contribute = kw::KcagcContribute{what, 0, code.clip, code.scale, argument, stream};
  r.devices = everyone ? devices_ : Members();
  r.length = length;
  KcagcAnswer a = channel_.Ask(std::move(r));
  if (!a.status.ok()) return a.status;
  if (a.sum.size() != length) return Status::DataLoss();
  std::vector<float> out(length);
  NODEFL_TRY(nodefl::secagg::DecodeFixedPointSum(code, Span<const uint32_t>(a.sum.data(), a.sum.size()),
                                         Span<float>(out.data(), out.size())));
  return out;
}

Result<std::vector<float>> KcagcRemoteParticipants::SumRangeBounds(const nodefl::secagg::FixedPoint& range_code) {
  return Sum(kw::KcagcContribution::kRangeBound, 0, 0, 1, range_code, true);
}

Result<std::vector<kw::Assignment>> KcagcRemoteParticipants::LocalClusters(uint32_t local_clusters) {
  KcagcRequest r;
  r.what = "Protocol 1's local clusters";
  AddWord(kw::kKcagcLocalCluster, local_clusters, devices_, &r.records);
  r.collect_local_clusters = true;
  KcagcAnswer a = channel_.Ask(std::move(r));
  if (!a.status.ok()) return a.status;
  return std::move(a.local_clusters);
}

Status KcagcRemoteParticipants::BeginStage(const KcagcStageSetup& stage) {
  if (stage.count < 2 || stage.first + stage.count > devices_.size() ||
      (stage.groups != nullptr && (stage.parts.size() != stage.count || stage.children.size() != stage.count))) {
    return Status::InvalidArgument();
  }
  stage_ = stage;
  in_stage_ = true;
  points_ = stage.points(nodes_);
  const std::vector<uint32_t> to = Members();
  KcagcRequest r;
  r.what = "a stage's start";
  if (stage.groups != nullptr) {
    const kw::Intersections& g = *stage.groups;
    AddArray(kw::KcagcArray::kGroupNodes, g.nodes, to, &r.records);
    AddArray(kw::KcagcArray::kGroupOffsets, g.offsets, to, &r.records);
    const std::vector<uint32_t> keys(g.keys.begin(), g.keys.end());
    AddArray(kw::KcagcArray::kGroupKeys, keys, to, &r.records);
  }
  for (uint32_t i = 0; i < stage.count; ++i) {
    kw::KcagcStage s;
    s.points = stage.groups == nullptr ? kw::KcagcPoints::kNodes : kw::KcagcPoints::kVirtual;
    s.tree_node = stage.tree_node;
    s.position = i;
    s.members = stage.count;
    if (stage.groups != nullptr) {
      s.groups = stage.groups->size();
      s.parts = stage.groups->parts;
      s.part = stage.parts[i];
      s.child = stage.children[i];
    }
    uint8_t bytes[kw::kKcagcStageBytes];
    kw::EncodeKcagcStage(s, bytes);
    r.records.push_back(Record(to[i], kw::kKcagcStage, std::vector<uint8_t>(bytes, bytes + sizeof bytes)));
  }
  channel_.Post(std::move(r));
  return Status::Ok();
}

Result<std::vector<float>> KcagcRemoteParticipants::SumSeedDistances(uint32_t seed, const nodefl::secagg::FixedPoint& code) {
  if (!in_stage_) return Status::FailedPrecondition();
  return Sum(kw::KcagcContribution::kSeedDistances, seed, 0, points_, code, false);
}

Status KcagcRemoteParticipants::SeedCentres(std::span<const uint32_t> seeds) {
  if (!in_stage_) return Status::FailedPrecondition();
  const std::vector<uint32_t> to = Members();
  KcagcRequest r;
  r.what = "the seeds";
  AddArray(kw::KcagcArray::kSeeds, seeds, to, &r.records);
  AddWord(kw::kKcagcSeedCentres, static_cast<uint32_t>(seeds.size()), to, &r.records);
  channel_.Post(std::move(r));
  return Status::Ok();
}

Result<std::vector<float>> KcagcRemoteParticipants::SumLocalSeedDistances(uint32_t centres, uint64_t stream,
                                                                          const nodefl::secagg::FixedPoint& code) {
  if (!in_stage_) return Status::FailedPrecondition();
  const uint64_t length = uint64_t{points_} * centres;
  if (length > nodefl::secagg::kMaxAggLength) return Status::OutOfRange();
  return Sum(kw::KcagcContribution::kLocalSeeding, centres, stream, static_cast<uint32_t>(length), code, false);
}

Status KcagcRemoteParticipants::UpdateCentres(const kw::Assignment& assignment) {
  if (!in_stage_ || assignment.size() != points_) return Status::FailedPrecondition();
  const std::vector<uint32_t> to = Members();
  KcagcRequest r;
  r.what = "an assignment";
  AddArray(kw::KcagcArray::kAssignment, AsWords(assignment), to, &r.records);
  AddWord(kw::kKcagcUpdateCentres, points_, to, &r.records);
  channel_.Post(std::move(r));
  return Status::Ok();
}

Result<std::vector<float>> KcagcRemoteParticipants::SumDistances(uint32_t centres, const nodefl::secagg::FixedPoint& code) {
  if (!in_stage_) return Status::FailedPrecondition();
  const uint64_t length = uint64_t{points_} * centres;
  if (length > nodefl::secagg::kMaxAggLength) return Status::OutOfRange();
  return Sum(kw::KcagcContribution::kDistances, centres, 0, static_cast<uint32_t>(length), code, false);
}

Status KcagcRemoteParticipants::EndStage(uint32_t kept_restart) {
  if (!in_stage_) return Status::FailedPrecondition();
  KcagcRequest r;
  r.what = "a stage's end";
  AddWord(kw::kKcagcEndStage, kept_restart, Members(), &r.records);
  channel_.Post(std::move(r));
  in_stage_ = false;
  return Status::Ok();
}

Result<std::vector<float>> KcagcRemoteParticipants::SumSpectralStep(uint32_t step, const kw::Matrix& block,
                                                                    const nodefl::secagg::FixedPoint& code) {
  if (in_stage_) return Status::FailedPrecondition();
  if (block.rows() != static_cast<Eigen::Index>(nodes_) || block.cols() == 0 || block.cols() > block.rows()) {
    return Status::InvalidArgument();
  }
  const uint64_t length = uint64_t{nodes_} * static_cast<uint64_t>(block.cols());
  if (length > nodefl::secagg::kMaxAggLength) return Status::OutOfRange();
  // Q_t as the floats the server holds (row-major, node by node): the
  // participants multiply exactly the block its Rayleigh-Ritz step uses.
  std::vector<uint32_t> bits(length);
  static_assert(sizeof(float) == sizeof(uint32_t), "binary32");
  std::memcpy(bits.data(), block.data(), length * sizeof(uint32_t));
  std::vector<DeviceData> records;
  AddArray(kw::KcagcArray::kBlock, bits, devices_, &records);
  const kw::KcagcSpectralStep instruction{step, nodes_, static_cast<uint32_t>(block.cols())};
  uint8_t bytes[kw::kKcagcSpectralStepBytes];
  kw::EncodeKcagcSpectralStep(instruction, bytes);
  for (uint32_t device : devices_) {
    records.push_back(Record(device, kw::kKcagcSpectralStep, std::vector<uint8_t>(bytes, bytes + sizeof bytes)));
  }
  return Sum(kw::KcagcContribution::kSpectralProduct, step, 0, static_cast<uint32_t>(length), code, true,
             std::move(records));
}

Status KcagcRemoteParticipants::Finish(const kw::Assignment& clustering) {
  if (clustering.size() != nodes_) return Status::InvalidArgument();
  KcagcRequest r;
  r.what = "the final clustering";
  AddArray(kw::KcagcArray::kAssignment, AsWords(clustering), devices_, &r.records);
  AddWord(kw::kKcagcDone, nodes_, devices_, &r.records);
  channel_.Post(std::move(r));
  return Status::Ok();
}

}  // namespace nodefl::server::jobs
