// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FrameDecoder (protocol/frame.h) against a reference reading of the same
// bytes: the stream is fed in pieces whose sizes come from the input, and
// the frames the decoder yields, its error and Finish() must be exactly what
// reading "u32 big-endian length, payload" in one pass gives. Input: byte 0
// picks max_payload (1 .. kMaxFramePayloadBytes), byte 1 seeds the piece
// sizes, the rest is the stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nodefl/protocol/frame.h"

namespace {

using nodefl::ByteSpan;
using nodefl::ConstByteSpan;
using nodefl::StatusCode;
namespace protocol = nodefl::protocol;

struct Reference {
  std::vector<std::vector<uint8_t>> frames;
  StatusCode error = StatusCode::kOk;
  bool truncated = false;  // the stream ended inside a frame
};

Reference Read(const uint8_t* data, size_t size, size_t max_payload) {
  Reference r;
  size_t at = 0;
  while (at < size) {
    if (size - at < 4) {
      r.truncated = true;
      return r;
    }
    const size_t length = (size_t{data[at]} << 24) | (size_t{data[at + 1]} << 16) | (size_t{data[at + 2]} << 8) |
                          size_t{data[at + 3]};
    if (length == 0) {
      r.error = StatusCode::kDataLoss;
      return r;
    }
    if (length > max_payload) {
      r.error = StatusCode::kResourceExhausted;
      return r;
    }
    if (size - at - 4 < length) {
      r.truncated = true;
      return r;
    }
    r.frames.emplace_back(data + at + 4, data + at + 4 + length);
    at += 4 + length;
  }
  return r;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_payload = 1 + (size_t{data[0]} * 37) % protocol::kMaxFramePayloadBytes;
  uint32_t pieces = data[1] | 1u;
  data += 2;
  size -= 2;
  const Reference expected = Read(data, size, max_payload);

  static uint8_t storage[protocol::FrameDecoder::StorageBytes()];
  protocol::FrameDecoder decoder;
  Check(decoder.Init(ByteSpan(storage, protocol::FrameDecoder::StorageBytes(max_payload)), max_payload).ok());
  size_t at = 0, frames = 0;
  StatusCode error = StatusCode::kOk;
  while (at < size && error == StatusCode::kOk) {
    pieces = pieces * 1103515245u + 12345u;
    const size_t piece = 1 + (pieces >> 16) % 97;
    ConstByteSpan in(data + at, piece < size - at ? piece : size - at);
    while (!in.empty()) {
      size_t consumed = 0;
      const nodefl::Status s = decoder.Feed(in, &consumed);
      Check(consumed <= in.size());
      if (!s.ok()) {
        error = s.code();
        break;
      }
      in = in.subspan(consumed);
      at += consumed;
      if (decoder.has_frame()) {
        Check(frames < expected.frames.size());
        const ConstByteSpan f = decoder.frame();
        const std::vector<uint8_t>& want = expected.frames[frames];
        Check(f.size() == want.size() && std::memcmp(f.data(), want.data(), f.size()) == 0);
        Check(decoder.raw_frame().size() == f.size() + 4);
        decoder.PopFrame();
        ++frames;
      } else {
        Check(consumed > 0 || in.empty());
      }
    }
  }
  Check(frames == expected.frames.size());
  Check(error == expected.error);
  if (error != StatusCode::kOk) {
    size_t consumed = 0;
    Check(decoder.Feed(ConstByteSpan(data, size), &consumed).code() == error);  // sticky
    Check(consumed == 0);
  } else {
    Check(decoder.Finish().ok() == !expected.truncated);
  }
  return 0;
}
