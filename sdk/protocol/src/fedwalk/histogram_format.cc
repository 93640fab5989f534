// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/fedwalk/histogram_format.h"

#include <cmath>

#include "nodefl/core/little_endian.h"

namespace nodefl::fedwalk {

Status CheckHistogramParameters(const HistogramParameters& p) {
  if (p.release < 1 || p.release > p.releases || p.releases > kMaxHistogramReleases || p.vertex_count < 1 ||
      p.vertex_count == UINT32_MAX || p.clusters < 1 || p.clusters > kMaxClusters || !std::isfinite(p.epsilon) ||
      !(p.epsilon > 0)) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Status EncodeHistogramParameters(const HistogramParameters& p, ByteSpan out) {
  if (out.size() < kHistogramParametersBytes) return Status::InvalidArgument();
  NODEFL_TRY(CheckHistogramParameters(p));
  uint8_t* o = out.data();
  o[0] = kHistogramParametersVersion;
  o[1] = p.release;
  o[2] = p.releases;
  o[3] = 0;
  StoreU32Le(p.vertex_count, o + 4);
  StoreU32Le(p.clusters, o + 8);
  StoreU32Le(0, o + 12);
  StoreF64Le(p.epsilon, o + 16);
  return Status::Ok();
}

Result<HistogramParameters> DecodeHistogramParameters(ConstByteSpan bytes) {
  if (bytes.size() != kHistogramParametersBytes) return Status::InvalidArgument();
  const uint8_t* in = bytes.data();
  if (in[0] != kHistogramParametersVersion || in[3] != 0 || LoadU32Le(in + 12) != 0) {
    return Status::InvalidArgument();
  }
  HistogramParameters p;
  p.release = in[1];
  p.releases = in[2];
  p.vertex_count = LoadU32Le(in + 4);
  p.clusters = LoadU32Le(in + 8);
  p.epsilon = LoadF64Le(in + 16);
  NODEFL_TRY(CheckHistogramParameters(p));
  return p;
}

}  // namespace nodefl::fedwalk
