// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/lumos/train_format.h"

#include <cmath>

#include "nodefl/core/little_endian.h"

namespace nodefl::lumos {
namespace {

// One code of |x| <= clip at scale 2^scale_log2 stays below 2^31 (the
// fixed-point code of secagg/fixed_point.h), and the clip is a number.
bool SecureCodeFits(float clip, int8_t scale_log2) {
  return std::isfinite(clip) && clip > 0.0f && std::ldexp(double{clip}, scale_log2) < 2147483648.0;
}

}  // namespace

Result<size_t> EncodeTrainParameters(const TrainParameters& p, ByteSpan out) {
  if (out.size() < kTrainParametersBytes) return Status::ResourceExhausted();
  uint8_t* q = out.data();
  q[0] = kTrainVersion;
  q[1] = static_cast<uint8_t>(p.phase);
  q[2] = static_cast<uint8_t>((p.paper ? 1u : 0u) | (p.ego_star ? 2u : 0u) | (p.train ? 4u : 0u) |
                              (p.task == TrainTask::kLink ? 8u : 0u) | (p.secure_sum ? 16u : 0u));
  q[3] = p.layer;
  StoreU32Le(p.features, q + 4);
  StoreU16Le(p.hidden, q + 8);
  StoreU16Le(p.out, q + 10);
  q[12] = p.heads;
  StoreU16Le(p.classes, q + 13);
  StoreF32Le(p.dropout, q + 15);
  StoreF32Le(p.epsilon, q + 19);
  StoreU32Le(p.parameters, q + 23);
  for (size_t i = 0; i < 16; ++i) q[27 + i] = p.salt[i];
  StoreU32Le(p.epoch, q + 43);
  StoreF32Le(p.label_epsilon, q + 47);
  q[51] = p.negatives;
  q[52] = p.eval_negatives;
  StoreU64Le(p.edge_seed, q + 53);
  StoreU16Le(p.projection, q + 61);
  StoreU64Le(p.projection_seed, q + 63);
  StoreF32Le(p.secure_clip, q + 71);
  q[75] = static_cast<uint8_t>(p.secure_scale_log2);
  q[76] = static_cast<uint8_t>(p.secure_loss_scale_log2);
  Result<TrainParameters> check = DecodeTrainParameters(ConstByteSpan(out.data(), kTrainParametersBytes));
  if (!check.ok()) return check.status();
  return kTrainParametersBytes;
}

Result<TrainParameters> DecodeTrainParameters(ConstByteSpan bytes) {
  if (bytes.size() != kTrainParametersBytes || bytes[0] != kTrainVersion) return Status::InvalidArgument();
  const uint8_t* q = bytes.data();
  if (q[1] < static_cast<uint8_t>(TrainPhase::kSetup) || q[1] > static_cast<uint8_t>(TrainPhase::kReport)) {
    return Status::InvalidArgument();
  }
  if ((q[2] & ~31u) != 0 || (q[3] != 1 && q[3] != 2)) return Status::InvalidArgument();
  TrainParameters p;
  p.phase = static_cast<TrainPhase>(q[1]);
  p.paper = (q[2] & 1u) != 0;
  p.ego_star = (q[2] & 2u) != 0;
  p.train = (q[2] & 4u) != 0;
  p.layer = q[3];
  p.features = LoadU32Le(q + 4);
  p.hidden = static_cast<uint16_t>(q[8] | q[9] << 8);
  p.out = static_cast<uint16_t>(q[10] | q[11] << 8);
  p.heads = q[12];
  p.classes = static_cast<uint16_t>(q[13] | q[14] << 8);
  p.dropout = LoadF32Le(q + 15);
  p.epsilon = LoadF32Le(q + 19);
  p.parameters = LoadU32Le(q + 23);
  for (size_t i = 0; i < 16; ++i) p.salt[i] = q[27 + i];
  p.epoch = LoadU32Le(q + 43);
  p.label_epsilon = LoadF32Le(q + 47);
  p.task = (q[2] & 8u) != 0 ? TrainTask::kLink : TrainTask::kNode;
  p.negatives = q[51];
  p.eval_negatives = q[52];
  p.edge_seed = LoadU64Le(q + 53);
  p.projection = static_cast<uint16_t>(q[61] | q[62] << 8);
  p.projection_seed = LoadU64Le(q + 63);
  p.secure_sum = (q[2] & 16u) != 0;
  p.secure_clip = LoadF32Le(q + 71);
  p.secure_scale_log2 = static_cast<int8_t>(q[75]);
  p.secure_loss_scale_log2 = static_cast<int8_t>(q[76]);
  if (p.secure_sum && (!SecureCodeFits(p.secure_clip, p.secure_scale_log2) ||
                       !SecureCodeFits(kTrainSecureLossClip, p.secure_loss_scale_log2))) {
    return Status::InvalidArgument();
  }
  if (p.features == 0 || p.hidden == 0 || p.out == 0 || p.heads == 0 || p.parameters == 0) {
    return Status::InvalidArgument();
  }
  if (!(p.dropout >= 0.0f && p.dropout < 1.0f) || !(std::isfinite(p.epsilon) && p.epsilon > 0.0f) ||
      !(std::isfinite(p.label_epsilon) && p.label_epsilon > 0.0f)) {
    return Status::InvalidArgument();
  }
  if (p.phase == TrainPhase::kEpoch && p.epoch == 0) return Status::InvalidArgument();
  return p;
}

Result<size_t> EncodeTrainMetrics(const TrainMetrics& m, ByteSpan out) {
  if (out.size() < kTrainMetricsBytes) return Status::ResourceExhausted();
  if (m.epoch == 0 || m.split > 2) return Status::InvalidArgument();
  StoreU32Le(m.epoch, out.data());
  out[4] = m.split;
  out[5] = static_cast<uint8_t>((m.labelled ? 1u : 0u) | (m.trained ? 2u : 0u) | (m.correct ? 4u : 0u));
  StoreU32Le(m.pool, out.data() + 6);
  StoreF64Le(m.loss, out.data() + 10);
  StoreU32Le(m.terms, out.data() + 18);
  return kTrainMetricsBytes;
}

Result<TrainMetrics> DecodeTrainMetrics(ConstByteSpan bytes) {
  if (bytes.size() != kTrainMetricsBytes || bytes[4] > 2 || (bytes[5] & ~7u) != 0) return Status::InvalidArgument();
  TrainMetrics m;
  m.epoch = LoadU32Le(bytes.data());
  m.split = bytes[4];
  m.labelled = (bytes[5] & 1u) != 0;
  m.trained = (bytes[5] & 2u) != 0;
  m.correct = (bytes[5] & 4u) != 0;
  m.pool = LoadU32Le(bytes.data() + 6);
  m.loss = LoadF64Le(bytes.data() + 10);
  m.terms = LoadU32Le(bytes.data() + 18);
  // A correct prediction needs a label; a loss taken needs terms (the link
  // task's losses need no label).
  if (m.epoch == 0 || !std::isfinite(m.loss) || (m.correct && !m.labelled) || (m.trained && m.terms == 0)) {
    return Status::InvalidArgument();
  }
  return m;
}

uint64_t PublicMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint8_t EdgeSplitOf(uint64_t seed, uint32_t a, uint32_t b) {
  const uint32_t lo = a < b ? a : b;
  const uint32_t hi = a < b ? b : a;
  // Over the seed and the ordered pair: uniform enough for a public
  // 80/5/15 split, and the same on every platform.
  const uint64_t x = PublicMix64(seed ^ ((uint64_t{lo} << 32) | hi));
  const double u = static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);  // [0, 1), 53 bits
  if (u < kEdgeTrainFraction) return 0;
  return u < kEdgeTrainFraction + kEdgeValidationFraction ? 1 : 2;
}

Status ProjectFeatures(uint64_t seed, Span<const float> x, Span<float> out) {
  if (out.empty() || x.empty() || out.size() > 65535) return Status::InvalidArgument();
  double norm2 = 0;
  for (float v : x) norm2 += double{v} * v;
  for (float& o : out) o = 0.0f;
  if (!(norm2 > 0)) return Status::Ok();
  // Column by column over the nonzero features (the shared datasets'
  // features are sparse): r sign draws per nonzero.
  for (size_t k = 0; k < x.size(); ++k) {
    if (x[k] == 0.0f) continue;
    const uint64_t column = PublicMix64(seed ^ (uint64_t{k} << 20));
    for (size_t j = 0; j < out.size(); ++j) {
      const bool negative = (PublicMix64(column + j) & 1u) != 0;
      out[j] += negative ? -x[k] : x[k];
    }
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(norm2));
  for (float& o : out) {
    float z = o * inv;
    z = z < -kProjectionClip ? -kProjectionClip : (z > kProjectionClip ? kProjectionClip : z);
    o = z / (2.0f * kProjectionClip);
  }
  return Status::Ok();
}

uint8_t ScoreBin(float logit) {
  if (!(logit >= -16.0f)) return 0;  // also NaN
  if (logit >= 16.0f) return static_cast<uint8_t>(kScoreBins - 1);
  const int bin = static_cast<int>((logit + 16.0f) * 8.0f);
  return static_cast<uint8_t>(bin < 0 ? 0 : (bin > 255 ? 255 : bin));
}

Result<size_t> EncodeTrainSummary(const TrainSummary& s, ByteSpan out) {
  if (out.size() < kTrainSummaryBytes) return Status::ResourceExhausted();
  const uint32_t fields[] = {s.workload, s.keepers, s.epochs, s.messages_sent,
                             s.messages_received, s.rejected, s.stale, s.key_failures};
  for (size_t i = 0; i < 8; ++i) StoreU32Le(fields[i], out.data() + 4 * i);
  StoreF64Le(s.epsilon_all_receivers, out.data() + 32);
  StoreF64Le(s.epsilon_per_receiver, out.data() + 40);
  return kTrainSummaryBytes;
}

Result<TrainSummary> DecodeTrainSummary(ConstByteSpan bytes) {
  if (bytes.size() != kTrainSummaryBytes) return Status::InvalidArgument();
  TrainSummary s;
  uint32_t* fields[] = {&s.workload, &s.keepers, &s.epochs, &s.messages_sent,
                        &s.messages_received, &s.rejected, &s.stale, &s.key_failures};
  for (size_t i = 0; i < 8; ++i) *fields[i] = LoadU32Le(bytes.data() + 4 * i);
  s.epsilon_all_receivers = LoadF64Le(bytes.data() + 32);
  s.epsilon_per_receiver = LoadF64Le(bytes.data() + 40);
  return s;
}

Result<size_t> EncodeTrainPeersGone(uint32_t epoch, Span<const uint32_t> devices, ByteSpan out) {
  if (epoch == 0 || devices.empty() || devices.size() > kTrainGoneIdsPerRecord) return Status::InvalidArgument();
  const size_t bytes = TrainPeersGoneBytes(devices.size());
  if (out.size() < bytes) return Status::ResourceExhausted();
  StoreU32Le(epoch, out.data());
  for (size_t i = 0; i < devices.size(); ++i) StoreU32Le(devices[i], out.data() + 4 + 4 * i);
  return bytes;
}

Result<TrainPeersGone> DecodeTrainPeersGone(ConstByteSpan record) {
  if (record.size() < TrainPeersGoneBytes(1) || (record.size() - 4) % 4 != 0 ||
      record.size() > TrainPeersGoneBytes(kTrainGoneIdsPerRecord)) {
    return Status::InvalidArgument();
  }
  TrainPeersGone gone;
  gone.epoch = LoadU32Le(record.data());
  if (gone.epoch == 0) return Status::InvalidArgument();
  gone.count = static_cast<uint32_t>((record.size() - 4) / 4);
  return gone;
}

uint32_t TrainPeersGoneAt(ConstByteSpan record, size_t i) { return LoadU32Le(record.data() + 4 + 4 * i); }

}  // namespace nodefl::lumos
