// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/fedwalk/hct_format.h"

#include <cmath>

#include "nodefl/core/little_endian.h"

namespace nodefl::fedwalk {

Status CheckHctParameters(const HctParameters& p) {
  const bool mode_ok = p.mode == PrivacyMode::kStrict || p.mode == PrivacyMode::kPaper;
  auto eps_ok = [](double e) { return std::isfinite(e) && e > 0; };
  if (!mode_ok || p.bins < 1 || p.bins > kMaxBins || p.buckets < kMinBuckets || p.buckets > kMaxBuckets ||
      p.vertex_count < 1 || p.vertex_count >= kAbsentVertex || !eps_ok(p.epsilon_bins) ||
      !eps_ok(p.epsilon_upload) || !eps_ok(p.epsilon_walk) || p.codebook_k < 1 ||
      p.codebook_k > kMaxCodebookK) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Status EncodeHctParameters(const HctParameters& p, ByteSpan out) {
  if (out.size() < kHctParametersBytes) return Status::InvalidArgument();
  NODEFL_TRY(CheckHctParameters(p));
  uint8_t* o = out.data();
  o[0] = kHctParametersVersion;
  o[1] = static_cast<uint8_t>(p.mode);
  o[2] = p.bins;
  o[3] = p.buckets;
  StoreU32Le(p.vertex_count, o + 4);
  StoreF64Le(p.epsilon_bins, o + 8);
  StoreF64Le(p.epsilon_upload, o + 16);
  StoreF64Le(p.epsilon_walk, o + 24);
  StoreU16Le(p.codebook_k, o + 32);
  StoreU16Le(0, o + 34);
  return Status::Ok();
}

Result<HctParameters> DecodeHctParameters(ConstByteSpan bytes) {
  if (bytes.size() != kHctParametersBytes) return Status::InvalidArgument();
  const uint8_t* in = bytes.data();
  if (in[0] != kHctParametersVersion || in[1] > 1) return Status::InvalidArgument();
  HctParameters p;
  p.mode = static_cast<PrivacyMode>(in[1]);
  p.bins = in[2];
  p.buckets = in[3];
  p.vertex_count = LoadU32Le(in + 4);
  p.epsilon_bins = LoadF64Le(in + 8);
  p.epsilon_upload = LoadF64Le(in + 16);
  p.epsilon_walk = LoadF64Le(in + 24);
  p.codebook_k = LoadU16Le(in + 32);
  NODEFL_TRY(CheckHctParameters(p));
  return p;
}

uint32_t HistogramBucket(double value, uint32_t buckets) {
  if (!(value >= 1.0)) return 0;  // also NaN
  // frexp: value = m * 2^e with m in [0.5, 1), so 2^(e-1) <= value < 2^e
  // and the bucket is e.
  int e = 0;
  (void)std::frexp(value, &e);
  const uint32_t b = static_cast<uint32_t>(e);
  return b < buckets ? b : buckets - 1;
}

}  // namespace nodefl::fedwalk
