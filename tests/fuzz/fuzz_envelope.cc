// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DecodeEnvelope (protocol/envelope_codec.h) on any frame payload: no
// crash, no read past the input, and whatever decodes must encode again
// (the decoder accepts only what a sender may send) to bytes that decode
// and encode to themselves (one canonical form), within the frame limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace protocol = nodefl::protocol;
  static nodefl_wire_Envelope decoded, again;
  static uint8_t first[protocol::kMaxFramePayloadBytes], second[protocol::kMaxFramePayloadBytes];
  if (!protocol::DecodeEnvelope(nodefl::ConstByteSpan(data, size), &decoded).ok()) return 0;
  Check(protocol::CheckEnvelope(decoded).ok());
  const nodefl::Result<size_t> n = protocol::EncodeEnvelope(decoded, nodefl::ByteSpan(first));
  Check(n.ok());
  const nodefl::Result<size_t> sized = protocol::EncodedEnvelopeSize(decoded);
  Check(sized.ok() && *sized == *n);
  Check(protocol::DecodeEnvelope(nodefl::ConstByteSpan(first, *n), &again).ok());
  const nodefl::Result<size_t> m = protocol::EncodeEnvelope(again, nodefl::ByteSpan(second));
  Check(m.ok() && *m == *n && std::memcmp(first, second, *n) == 0);
  Check(protocol::BodyName(decoded.which_body) != nullptr);
  return 0;
}
