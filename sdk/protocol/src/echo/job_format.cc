// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/echo/job_format.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::echo {

Status ValidateEchoParameters(const EchoParameters& params) {
  if (params.messages_per_edge == 0 || params.messages_per_edge > kEchoMaxMessagesPerEdge) {
    return Status::InvalidArgument();
  }
  if (params.payload_bytes < kEchoHeaderBytes || params.payload_bytes > kEchoMaxPayloadBytes) {
    return Status::InvalidArgument();
  }
  return Status::Ok();
}

Result<size_t> EncodeEchoParameters(const EchoParameters& params, ByteSpan out) {
  NODEFL_TRY(ValidateEchoParameters(params));
  if (out.size() < kEchoParametersBytes) return Status::ResourceExhausted();
  for (size_t i = 0; i < kEchoJobSaltBytes; ++i) out[i] = params.salt[i];
  StoreU32Le(params.messages_per_edge, out.data() + kEchoJobSaltBytes);
  StoreU32Le(params.payload_bytes, out.data() + kEchoJobSaltBytes + 4);
  return kEchoParametersBytes;
}

Result<EchoParameters> DecodeEchoParameters(ConstByteSpan bytes) {
  if (bytes.size() != kEchoJobSaltBytes && bytes.size() != kEchoParametersBytes) return Status::InvalidArgument();
  EchoParameters params;
  for (size_t i = 0; i < kEchoJobSaltBytes; ++i) params.salt[i] = bytes[i];
  if (bytes.size() == kEchoParametersBytes) {
    params.messages_per_edge = LoadU32Le(bytes.data() + kEchoJobSaltBytes);
    params.payload_bytes = LoadU32Le(bytes.data() + kEchoJobSaltBytes + 4);
  }
  NODEFL_TRY(ValidateEchoParameters(params));
  return params;
}

Result<size_t> EncodeEchoPeersGone(Span<const uint32_t> devices, ByteSpan out) {
  if (devices.empty() || devices.size() > kEchoMaxPeersGonePerRecord) return Status::InvalidArgument();
  const size_t bytes = 4 + 4 * devices.size();
  if (out.size() < bytes) return Status::ResourceExhausted();
  StoreU32Le(static_cast<uint32_t>(devices.size()), out.data());
  for (size_t i = 0; i < devices.size(); ++i) StoreU32Le(devices[i], out.data() + 4 + 4 * i);
  return bytes;
}

Result<uint32_t> DecodeEchoPeersGone(ConstByteSpan record) {
  if (record.size() < 4) return Status::InvalidArgument();
  const uint32_t count = LoadU32Le(record.data());
  if (count == 0 || count > kEchoMaxPeersGonePerRecord || record.size() != 4 + 4 * size_t{count}) {
    return Status::InvalidArgument();
  }
  return count;
}

uint32_t EchoPeersGoneAt(ConstByteSpan record, size_t i) { return LoadU32Le(record.data() + 4 + 4 * i); }

}  // namespace nodefl::echo
