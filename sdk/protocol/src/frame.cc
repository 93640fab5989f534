// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/protocol/frame.h"

#include <pb_encode.h>

#include <cstring>

#include "nodefl/core/assert.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::protocol {

uint32_t ReadFrameLength(ConstByteSpan header) {
  NODEFL_CHECK(header.size() >= kFrameHeaderBytes);
  return (static_cast<uint32_t>(header[0]) << 24) | (static_cast<uint32_t>(header[1]) << 16) |
         (static_cast<uint32_t>(header[2]) << 8) | static_cast<uint32_t>(header[3]);
}

void WriteFrameLength(uint32_t length, ByteSpan header) {
  NODEFL_CHECK(header.size() >= kFrameHeaderBytes);
  header[0] = static_cast<uint8_t>(length >> 24);
  header[1] = static_cast<uint8_t>(length >> 16);
  header[2] = static_cast<uint8_t>(length >> 8);
  header[3] = static_cast<uint8_t>(length);
}

// ---- FrameDecoder -----------------------------------------------------------

FrameDecoder::FrameDecoder(ByteSpan storage, size_t max_payload) {
  Init(storage, max_payload).IgnoreError();  // reported by status()
}

Status FrameDecoder::Init(ByteSpan storage, size_t max_payload) {
  storage_ = storage;
  max_payload_ = max_payload;
  configured_ = max_payload >= 1 && max_payload <= kMaxFramePayloadBytes &&
                storage.size() >= StorageBytes(max_payload);
  Reset();
  return status_;
}

void FrameDecoder::Reset() {
  filled_ = 0;
  payload_size_ = 0;
  has_frame_ = false;
  status_ = configured_ ? Status::Ok() : Status::InvalidArgument();
}

Status FrameDecoder::Feed(ConstByteSpan in, size_t* consumed) {
  NODEFL_CHECK(consumed != nullptr);
  *consumed = 0;
  if (!status_.ok()) return status_;
  size_t taken = 0;
  while (!has_frame_ && taken < in.size()) {
    if (filled_ < kFrameHeaderBytes) {
      const size_t n = (kFrameHeaderBytes - filled_ < in.size() - taken)
                           ? kFrameHeaderBytes - filled_
                           : in.size() - taken;
      std::memcpy(storage_.data() + filled_, in.data() + taken, n);
      filled_ += n;
      taken += n;
      if (filled_ < kFrameHeaderBytes) break;
      const uint32_t length = ReadFrameLength(storage_);
      // Judge the prefix before buffering a single payload byte.
      if (length == 0) {
        status_ = Status::DataLoss();
      } else if (length > max_payload_) {
        status_ = Status::ResourceExhausted();
      }
      if (!status_.ok()) {
        *consumed = taken;
        return status_;
      }
      payload_size_ = length;
    } else {
      const size_t want = kFrameHeaderBytes + payload_size_ - filled_;
      const size_t n = want < in.size() - taken ? want : in.size() - taken;
      std::memcpy(storage_.data() + filled_, in.data() + taken, n);
      filled_ += n;
      taken += n;
    }
    if (filled_ >= kFrameHeaderBytes && filled_ == kFrameHeaderBytes + payload_size_) {
      has_frame_ = true;
    }
  }
  *consumed = taken;
  return Status::Ok();
}

ConstByteSpan FrameDecoder::frame() const {
  if (!has_frame_) return ConstByteSpan();
  return ConstByteSpan(storage_.data() + kFrameHeaderBytes, payload_size_);
}

ConstByteSpan FrameDecoder::raw_frame() const {
  if (!has_frame_) return ConstByteSpan();
  return ConstByteSpan(storage_.data(), kFrameHeaderBytes + payload_size_);
}

void FrameDecoder::PopFrame() {
  if (!has_frame_) return;
  has_frame_ = false;
  filled_ = 0;
  payload_size_ = 0;
}

Status FrameDecoder::Finish() const {
  if (!status_.ok()) return status_;
  if (!has_frame_ && filled_ != 0) return Status::DataLoss();
  return Status::Ok();
}

// ---- encoding -----------------------------------------------------------------

Result<size_t> EncodedFrameSize(const nodefl_wire_Envelope& env, size_t max_payload) {
  NODEFL_TRY_ASSIGN(const size_t payload, EncodedEnvelopeSize(env));
  const size_t limit = max_payload < kMaxFramePayloadBytes ? max_payload : kMaxFramePayloadBytes;
  if (payload > limit) return Status::ResourceExhausted();
  return kFrameHeaderBytes + payload;
}

Result<size_t> EncodeFrame(const nodefl_wire_Envelope& env, ByteSpan out, size_t max_payload) {
  NODEFL_TRY_ASSIGN(const size_t frame_size, EncodedFrameSize(env, max_payload));
  if (out.size() < frame_size) return Status::OutOfRange();
  const size_t payload = frame_size - kFrameHeaderBytes;
  pb_ostream_t stream = pb_ostream_from_buffer(out.data() + kFrameHeaderBytes, payload);
  if (!pb_encode(&stream, nodefl_wire_Envelope_fields, &env) || stream.bytes_written != payload) {
    return Status::Internal();  // the sizing pass accepted what encoding refused
  }
  WriteFrameLength(static_cast<uint32_t>(payload), out);
  return frame_size;
}

}  // namespace nodefl::protocol
