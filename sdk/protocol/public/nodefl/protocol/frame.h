// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Sans-IO framing. On the wire every message is
//
//   +-------------------------+--------------------------------+
//   | length: u32 big-endian  | payload: one encoded Envelope  |
//   +-------------------------+--------------------------------+
//
// with 1 <= length <= the receiver's limit (<= kMaxFramePayloadBytes). The
// decoder reassembles frames from whatever pieces the transport delivers
// (TLS records, socket reads) into caller storage; the encoder writes one
// frame into a caller buffer. Neither allocates or does I/O.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::protocol {

// Reassembles frames from a byte stream. Usage:
//
//   while (!in.empty()) {
//     size_t n = 0;
//     Status s = decoder.Feed(in, &n);     // on error: send Error, close
//     in = in.subspan(n);
//     if (decoder.has_frame()) { Handle(decoder.frame()); decoder.PopFrame(); }
//   }
//
// A length prefix of 0 (kDataLoss) or above max_payload (kResourceExhausted)
// is rejected as soon as its fourth byte arrives, before any payload is
// buffered. Errors are sticky: every later Feed returns the same status
// until Reset(), because the stream position is lost and the connection must
// be closed.
class FrameDecoder {
 public:
  // Storage needed for frames of up to `max_payload` bytes.
  static constexpr size_t StorageBytes(size_t max_payload = kMaxFramePayloadBytes) {
    return kFrameHeaderBytes + max_payload;
  }

  // Unusable (Feed fails with kFailedPrecondition) until Init().
  FrameDecoder() = default;
  // Init() in one step; check status() if the arguments may be wrong.
  explicit FrameDecoder(ByteSpan storage, size_t max_payload = kMaxFramePayloadBytes);
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // `storage` (at least StorageBytes(max_payload)) must outlive the decoder.
  // 1 <= max_payload <= kMaxFramePayloadBytes: what this side advertises
  // (Hello/Welcome.max_frame_bytes). kInvalidArgument otherwise, and the
  // decoder stays failed.
  Status Init(ByteSpan storage, size_t max_payload = kMaxFramePayloadBytes);

  // Consumes bytes from `in` until one complete frame is available, then
  // stops so that the caller can handle it; `*consumed` (always set) says
  // how many bytes were taken. While a frame is pending, Feed takes nothing
  // and returns OK. Errors: kDataLoss (length 0), kResourceExhausted (length
  // above max_payload), the sticky status of an earlier error, or
  // kFailedPrecondition if not initialised.
  Status Feed(ConstByteSpan in, size_t* consumed);

  bool has_frame() const { return has_frame_; }
  // The pending frame's payload (without the prefix). Valid until PopFrame(),
  // Reset() or Init(); empty if there is none.
  ConstByteSpan frame() const;
  // The pending frame including its length prefix (e.g. to forward it).
  ConstByteSpan raw_frame() const;
  // Drops the pending frame (no-op if there is none).
  void PopFrame();

  // End of stream: OK if it ended between frames, kDataLoss if it ended
  // inside one (a truncated frame), the sticky status if already failed.
  // A pending, unpopped frame counts as complete.
  Status Finish() const;

  // Forgets buffered bytes, a pending frame and a sticky error (a new
  // connection). Keeps storage and max_payload.
  void Reset();

  // OK, or the sticky error.
  Status status() const { return status_; }
  size_t max_payload() const { return max_payload_; }
  // Bytes of an incomplete frame held so far (prefix included).
  size_t buffered_bytes() const { return has_frame_ ? 0 : filled_; }

 private:
  ByteSpan storage_;
  size_t max_payload_ = 0;
  size_t filled_ = 0;       // bytes of the current frame in storage_, prefix included
  size_t payload_size_ = 0; // valid once filled_ >= kFrameHeaderBytes
  bool has_frame_ = false;
  bool configured_ = false;
  Status status_ = Status::FailedPrecondition();
};

// Writes `env` as one frame (prefix + payload) into `out` and returns the
// number of bytes written. The envelope is measured first with nanopb's
// sizing stream, so nothing is written unless the whole frame fits.
//   kInvalidArgument    wrong version, unknown body, or a field out of bounds
//   kResourceExhausted  payload larger than `max_payload` (pass the peer's
//                       advertised limit; never above kMaxFramePayloadBytes)
//   kOutOfRange         `out` is smaller than the frame
Result<size_t> EncodeFrame(const nodefl_wire_Envelope& env, ByteSpan out,
                           size_t max_payload = kMaxFramePayloadBytes);

// Frame size (prefix included) EncodeFrame would write; errors as above
// except kOutOfRange.
Result<size_t> EncodedFrameSize(const nodefl_wire_Envelope& env,
                                size_t max_payload = kMaxFramePayloadBytes);

// The payload limit to encode for, from a peer's advertised
// Hello/Welcome.max_frame_bytes: 0 (not set) means kMaxFramePayloadBytes, and
// nothing above kMaxFramePayloadBytes is ever sent.
constexpr size_t PeerFrameLimit(uint32_t advertised) {
  return (advertised == 0 || advertised > kMaxFramePayloadBytes) ? kMaxFramePayloadBytes
                                                                 : advertised;
}

// Reads the big-endian length prefix at the start of `header` (>= 4 bytes).
uint32_t ReadFrameLength(ConstByteSpan header);
// Writes `length` big-endian into the first 4 bytes of `header`.
void WriteFrameLength(uint32_t length, ByteSpan header);

}  // namespace nodefl::protocol
