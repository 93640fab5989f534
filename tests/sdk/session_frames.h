// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the scripted servers of the role tests do with a DeviceSession's
// bytes: frame envelopes to it, and read back the envelopes it wrote.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::testing {

// An empty envelope with body `tag`, for `job`'s `round`.
inline nodefl_wire_Envelope AddressedEnvelope(pb_size_t tag, uint64_t job, uint32_t round) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = tag;
  e.job_id = job;
  e.round = round;
  return e;
}

// `e` as a frame of the current protocol version with sequence number `seq`.
inline std::vector<uint8_t> FrameTo(nodefl_wire_Envelope e, uint64_t seq) {
  e.version = protocol::kProtocolVersion;
  e.seq = seq;
  std::vector<uint8_t> out(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes);
  Result<size_t> n = protocol::EncodeFrame(e, out);
  EXPECT_TRUE(n.ok());
  out.resize(n.ok() ? *n : 0);
  return out;
}

// Hands every envelope the session has written to `handle(envelope)`, then
// consumes its output.
template <typename Handle>
void DrainSessionOutput(device::DeviceSession& session, Handle handle) {
  const ConstByteSpan bytes = session.PendingOutput();
  size_t pos = 0;
  auto e = std::make_unique<nodefl_wire_Envelope>();
  while (pos + protocol::kFrameHeaderBytes <= bytes.size()) {
    const size_t len = (size_t{bytes[pos]} << 24) | (size_t{bytes[pos + 1]} << 16) | (size_t{bytes[pos + 2]} << 8) |
                       bytes[pos + 3];
    EXPECT_TRUE(protocol::DecodeEnvelope(bytes.subspan(pos + protocol::kFrameHeaderBytes, len), e.get()).ok());
    handle(*e);
    pos += protocol::kFrameHeaderBytes + len;
  }
  session.ConsumeOutput(bytes.size());
}

}  // namespace nodefl::testing
