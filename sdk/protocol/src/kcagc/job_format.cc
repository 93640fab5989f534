// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/kcagc/job_format.h"

#include <cmath>

namespace nodefl::kcagc {
namespace {

bool PositiveFinite(float x) { return x > 0.0f && std::isfinite(x); }

}  // namespace

void EncodeKcagcParameters(const KcagcParameters& p, uint8_t (&out)[kKcagcParametersBytes]) {
  uint8_t* at = out;
  for (size_t i = 0; i < kKcagcSaltBytes; ++i) *at++ = p.salt[i];
  *at++ = static_cast<uint8_t>(p.mode);
  StoreU32Le(p.clusters, at);
  at += 4;
  StoreU32Le(p.local_clusters, at);
  at += 4;
  *at++ = static_cast<uint8_t>(p.filter);
  StoreU32Le(p.filter_order, at);
  at += 4;
  *at++ = p.self_loops ? 1 : 0;
  *at++ = static_cast<uint8_t>(p.space);
  StoreU32Le(p.space_dims, at);
  at += 4;
  *at++ = static_cast<uint8_t>(p.seeding);
  *at++ = static_cast<uint8_t>(p.virtual_nodes);
  StoreU32Le(p.iterations, at);
  at += 4;
  StoreU32Le(p.local_restarts, at);
  at += 4;
  StoreU64Le(p.seed, at);
  at += 8;
  StoreU32Le(p.participants, at);
  at += 4;
  *at++ = static_cast<uint8_t>(p.aggregation);
}

Result<KcagcParameters> DecodeKcagcParameters(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcParametersBytes) return Status::InvalidArgument();
  const uint8_t* at = bytes.data();
  KcagcParameters p;
  for (size_t i = 0; i < kKcagcSaltBytes; ++i) p.salt[i] = *at++;
  const uint8_t mode = *at++;
  p.clusters = LoadU32Le(at);
  at += 4;
  p.local_clusters = LoadU32Le(at);
  at += 4;
  const uint8_t filter = *at++;
  p.filter_order = LoadU32Le(at);
  at += 4;
  const uint8_t self_loops = *at++;
  const uint8_t space = *at++;
  p.space_dims = LoadU32Le(at);
  at += 4;
  const uint8_t seeding = *at++;
  const uint8_t virtual_nodes = *at++;
  p.iterations = LoadU32Le(at);
  at += 4;
  p.local_restarts = LoadU32Le(at);
  at += 4;
  p.seed = LoadU64Le(at);
  at += 8;
  p.participants = LoadU32Le(at);
  at += 4;
  const uint8_t aggregation = *at++;
  if (mode < 1 || mode > 4 || filter > 1 || self_loops > 1 || space > 2 || seeding > 1 || virtual_nodes > 1 ||
      aggregation > static_cast<uint8_t>(secagg::AggMode::kPaper)) {
    return Status::InvalidArgument();
  }
  p.mode = static_cast<KcagcMode>(mode);
  p.filter = static_cast<KcagcFilter>(filter);
  p.self_loops = self_loops == 1;
  p.space = static_cast<KcagcSpace>(space);
  p.seeding = static_cast<KcagcSeeding>(seeding);
  p.virtual_nodes = static_cast<KcagcVirtual>(virtual_nodes);
  p.aggregation = static_cast<secagg::AggMode>(aggregation);
  if (p.clusters == 0 || p.clusters > kKcagcMaxClusters || p.local_clusters == 0 ||
      p.local_clusters > kKcagcMaxClusters || p.space_dims > kKcagcMaxClusters || p.iterations == 0 || p.local_restarts == 0 || p.participants < 2 ||
      p.participants > kKcagcMaxParticipants) {
    return Status::InvalidArgument();
  }
  // The joint mode's server clusters the whitened space of all columns, the
  // only space it can compute without the features.
  if (p.mode == KcagcMode::kJoint && p.space != KcagcSpace::kWhitened) return Status::InvalidArgument();
  return p;
}

void EncodeKcagcWelcome(const KcagcWelcome& w, uint8_t (&out)[kKcagcWelcomeBytes]) {
  StoreU32Le(w.index, out);
  StoreU32Le(w.participants, out + 4);
}

Result<KcagcWelcome> DecodeKcagcWelcome(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcWelcomeBytes) return Status::InvalidArgument();
  KcagcWelcome w{LoadU32Le(bytes.data()), LoadU32Le(bytes.data() + 4)};
  if (w.participants < 2 || w.participants > kKcagcMaxParticipants || w.index >= w.participants) {
    return Status::InvalidArgument();
  }
  return w;
}

void EncodeKcagcReady(const KcagcReady& r, uint8_t (&out)[kKcagcReadyBytes]) {
  StoreU32Le(r.nodes, out);
  StoreU32Le(r.columns, out + 4);
}

Result<KcagcReady> DecodeKcagcReady(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcReadyBytes) return Status::InvalidArgument();
  KcagcReady r{LoadU32Le(bytes.data()), LoadU32Le(bytes.data() + 4)};
  if (r.nodes == 0 || r.columns == 0) return Status::InvalidArgument();
  return r;
}

Result<size_t> EncodeKcagcArrayRun(KcagcArray array, uint32_t total, uint32_t offset, Span<const uint32_t> values,
                                   ByteSpan out) {
  const size_t need = kKcagcArrayHeaderBytes + 4 * values.size();
  if (values.size() > kKcagcValuesPerRecord || out.size() < need) return Status::OutOfRange();
  StoreU32Le(static_cast<uint32_t>(array), out.data());
  StoreU32Le(total, out.data() + 4);
  StoreU32Le(offset, out.data() + 8);
  for (size_t i = 0; i < values.size(); ++i) StoreU32Le(values[i], out.data() + kKcagcArrayHeaderBytes + 4 * i);
  return need;
}

Result<KcagcArrayRun> DecodeKcagcArrayRun(ConstByteSpan bytes) {
  if (bytes.size() < kKcagcArrayHeaderBytes + 4 || bytes.size() > kKcagcRecordBytes ||
      (bytes.size() - kKcagcArrayHeaderBytes) % 4 != 0) {
    return Status::InvalidArgument();
  }
  const uint32_t array = LoadU32Le(bytes.data());
  if (array < static_cast<uint32_t>(KcagcArray::kAssignment) || array > static_cast<uint32_t>(KcagcArray::kBlock)) {
    return Status::InvalidArgument();
  }
  KcagcArrayRun r;
  r.array = static_cast<KcagcArray>(array);
  r.total = LoadU32Le(bytes.data() + 4);
  r.offset = LoadU32Le(bytes.data() + 8);
  r.values = bytes.subspan(kKcagcArrayHeaderBytes);
  if (r.offset > r.total || r.count() > r.total - r.offset) return Status::InvalidArgument();
  return r;
}

void EncodeKcagcContribute(const KcagcContribute& c, uint8_t (&out)[kKcagcContributeBytes]) {
  out[0] = static_cast<uint8_t>(c.what);
  StoreU32Le(c.aggregation, out + 1);
  StoreF32Le(c.clip, out + 5);
  StoreF32Le(c.scale, out + 9);
  StoreU32Le(c.argument, out + 13);
  StoreU64Le(c.stream, out + 17);
}

Result<KcagcContribute> DecodeKcagcContribute(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcContributeBytes) return Status::InvalidArgument();
  if (bytes[0] < static_cast<uint8_t>(KcagcContribution::kRangeBound) ||
      bytes[0] > static_cast<uint8_t>(KcagcContribution::kSpectralProduct)) {
    return Status::InvalidArgument();
  }
  KcagcContribute c;
  c.what = static_cast<KcagcContribution>(bytes[0]);
  c.aggregation = LoadU32Le(bytes.data() + 1);
  c.clip = LoadF32Le(bytes.data() + 5);
  c.scale = LoadF32Le(bytes.data() + 9);
  c.argument = LoadU32Le(bytes.data() + 13);
  c.stream = LoadU64Le(bytes.data() + 17);
  if (c.aggregation == 0 || !PositiveFinite(c.clip) || !PositiveFinite(c.scale)) return Status::InvalidArgument();
  return c;
}

void EncodeKcagcStage(const KcagcStage& s, uint8_t (&out)[kKcagcStageBytes]) {
  out[0] = static_cast<uint8_t>(s.points);
  const uint32_t words[7] = {s.tree_node, s.position, s.members, s.groups, s.parts, s.part, s.child};
  for (size_t i = 0; i < 7; ++i) StoreU32Le(words[i], out + 1 + 4 * i);
}

Result<KcagcStage> DecodeKcagcStage(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcStageBytes) return Status::InvalidArgument();
  if (bytes[0] != static_cast<uint8_t>(KcagcPoints::kNodes) && bytes[0] != static_cast<uint8_t>(KcagcPoints::kVirtual)) {
    return Status::InvalidArgument();
  }
  KcagcStage s;
  s.points = static_cast<KcagcPoints>(bytes[0]);
  uint32_t* fields[7] = {&s.tree_node, &s.position, &s.members, &s.groups, &s.parts, &s.part, &s.child};
  for (size_t i = 0; i < 7; ++i) *fields[i] = LoadU32Le(bytes.data() + 1 + 4 * i);
  if (s.members < 2 || s.position >= s.members) return Status::InvalidArgument();
  if (s.points == KcagcPoints::kVirtual && (s.groups == 0 || s.parts == 0 || s.part >= s.parts)) {
    return Status::InvalidArgument();
  }
  return s;
}

void EncodeKcagcSpectralStep(const KcagcSpectralStep& s, uint8_t (&out)[kKcagcSpectralStepBytes]) {
  StoreU32Le(s.step, out);
  StoreU32Le(s.rows, out + 4);
  StoreU32Le(s.columns, out + 8);
}

Result<KcagcSpectralStep> DecodeKcagcSpectralStep(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcSpectralStepBytes) return Status::InvalidArgument();
  KcagcSpectralStep s{LoadU32Le(bytes.data()), LoadU32Le(bytes.data() + 4), LoadU32Le(bytes.data() + 8)};
  if (s.rows == 0 || s.columns == 0 || s.columns > s.rows ||
      uint64_t{s.rows} * s.columns > secagg::kMaxAggLength) {
    return Status::InvalidArgument();
  }
  return s;
}

void EncodeKcagcWord(uint32_t value, uint8_t (&out)[kKcagcWordBytes]) { StoreU32Le(value, out); }

Result<uint32_t> DecodeKcagcWord(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcWordBytes) return Status::InvalidArgument();
  return LoadU32Le(bytes.data());
}

void EncodeKcagcRefuse(const KcagcRefuse& r, uint8_t (&out)[kKcagcRefuseBytes]) {
  out[0] = static_cast<uint8_t>(r.code);
  StoreU32Le(r.kind, out + 1);
}

Result<KcagcRefuse> DecodeKcagcRefuse(ConstByteSpan bytes) {
  if (bytes.size() != kKcagcRefuseBytes || bytes[0] == 0 ||
      bytes[0] > static_cast<uint8_t>(StatusCode::kUnauthenticated)) {
    return Status::InvalidArgument();
  }
  return KcagcRefuse{static_cast<StatusCode>(bytes[0]), LoadU32Le(bytes.data() + 1)};
}

}  // namespace nodefl::kcagc
