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

}  // namespace nodefl::echo
